package cli

import (
	"os"

	"github.com/hone-rl/hone/format/shard"
	"github.com/spf13/pflag"
)

// jobIndexEnv is the variable a Kubernetes Indexed Job sets to the pod's
// index, which --shard auto/n takes.
const jobIndexEnv = "JOB_COMPLETION_INDEX"

// ShardOption is the --shard flag of the stages that split their work
// (format/shard).
type ShardOption struct{ spec string }

// AddFlag registers --shard on fs.
func (s *ShardOption) AddFlag(fs *pflag.FlagSet) {
	fs.StringVar(&s.spec, "shard", "", "do part `i/n` of the work (whole groups; the n parts together are the run); auto/n takes i from $"+jobIndexEnv+"; with -o DIR/ the part is written as DIR/part-IIIII-of-NNNNN.parquet")
}

// Shard parses the flag and names the output the shard writes (see
// shard.Shard.Output); a bad value is a usage error.
func (s *ShardOption) Shard(output string) (shard.Shard, string, error) {
	var sh shard.Shard
	if s.spec != "" {
		var err error
		if sh, err = shard.Parse(s.spec, os.Getenv(jobIndexEnv)); err != nil {
			return sh, "", Usage(err)
		}
	}
	out, err := sh.Output(output)
	if err != nil {
		return sh, "", Usage(err)
	}
	return sh, out, nil
}

// StageFlags are the flags the stages that write one output file (or a
// shard's part of it) share after their own: --log-*, -o/--output and
// --shard.
type StageFlags struct {
	Log    LogOptions
	Output string // after Parse: the file this process writes (the shard's part)
	shard  ShardOption
}

// AddFlags registers them on fs, -o's help being outputUsage.
func (f *StageFlags) AddFlags(fs *pflag.FlagSet, outputUsage string) {
	f.Log.AddFlags(fs)
	fs.StringVarP(&f.Output, "output", "o", "", outputUsage)
	f.shard.AddFlag(fs)
}

// Parse parses args into fs (ParseFlags: help is true where --help was
// asked and answered) and resolves --shard against -o (ShardOption.Shard):
// it returns the shard and leaves in Output the file it writes.
func (f *StageFlags) Parse(fs *pflag.FlagSet, args []string) (help bool, sh shard.Shard, err error) {
	if help, err := ParseFlags(fs, args); help || err != nil {
		return help, sh, err
	}
	sh, f.Output, err = f.shard.Shard(f.Output)
	return false, sh, err
}

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

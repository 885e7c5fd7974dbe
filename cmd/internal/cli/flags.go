package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"
)

// NewFlagSet returns the flag set of a stage binary (or one of its
// subcommands): parse errors come back as errors (see ParseFlags), and
// --help prints usage, then the flags' defaults, to stderr.
func NewFlagSet(name, usage string, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	return fs
}

// ParseFlags parses args into fs. It reports help, with a nil error, when
// --help was asked for (the usage is printed by then, and the command should
// return nil), and marks every other parse error as a usage error (exit 2).
func ParseFlags(fs *pflag.FlagSet, args []string) (help bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return true, nil
		}
		return false, Usage(err)
	}
	return false, nil
}

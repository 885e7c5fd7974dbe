package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"
)

// NewFlagSet returns the flag set of a stage binary or one of its
// subcommands; name is the command as the user types it ("hone-collect
// proxy"). Parse errors come back as errors (see ParseFlags), and --help
// prints usage, then the flags' defaults, to stdout: help that was asked
// for is the command's output, which a user pipes into less or grep.
func NewFlagSet(name, usage string, stdout io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.Usage = func() {
		fmt.Fprint(stdout, usage)
		fs.PrintDefaults()
	}
	return fs
}

// ParseFlags parses args into fs. It reports help, with a nil error, when
// --help was asked for (the usage is printed by then, and the command should
// return nil), and marks every other parse error as a usage error (exit 2)
// that points to the --help of the flag set's command.
func ParseFlags(fs *pflag.FlagSet, args []string) (help bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return true, nil
		}
		return false, ForCommand(fs.Name(), Usage(err))
	}
	return false, nil
}

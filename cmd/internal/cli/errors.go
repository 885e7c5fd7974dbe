package cli

import (
	"context"
	"errors"

	"github.com/hone-rl/hone/internal/stageerr"
)

// Exit codes shared by every Hone binary.
const (
	ExitOK          = 0
	ExitFailure     = 1   // something went wrong during the run
	ExitUsage       = 2   // bad flags or arguments, or bad input data
	ExitInterrupted = 130 // stopped by SIGINT/SIGTERM (128 + SIGINT)
)

// The kinds of error are defined once, in internal/stageerr, because the
// stage libraries return them and cannot import this package (see that
// package's doc). The functions below only forward there, so that a main
// reads cli.Usagef like the rest of its conventions.

// Usage marks err as a usage error (bad flags, arguments, or a refused
// output destination): exit code 2. A nil err stays nil.
func Usage(err error) error { return stageerr.Usage(err) }

// Usagef is Usage(fmt.Errorf(format, args...)).
func Usagef(format string, args ...any) error { return stageerr.Usagef(format, args...) }

// BadInput marks err as bad input data (a file that does not exist, is not
// Parquet, or fails validation): exit code 2. A nil err stays nil.
func BadInput(err error) error { return stageerr.BadInput(err) }

// BadInputf is BadInput(fmt.Errorf(format, args...)).
func BadInputf(format string, args ...any) error { return stageerr.BadInputf(format, args...) }

// helpError points a usage error at the --help of the command it came from.
type helpError struct {
	command string // the binary and subcommand as typed ("hone-collect proxy")
	err     error
}

func (e *helpError) Error() string { return e.err.Error() }
func (e *helpError) Unwrap() error { return e.err }

// ForCommand points a usage error (Usage) at the --help of command, the
// binary and subcommand as typed ("hone-collect proxy"), so that the user
// reads the help of the command they got wrong. An error already pointed
// at a command keeps it (the innermost knows best); other errors, nil
// included, are returned as they are.
func ForCommand(command string, err error) error {
	var h *helpError
	if !isUsageOnly(err) || errors.As(err, &h) {
		return err
	}
	return &helpError{command: command, err: err}
}

// IsUsage reports whether err (or an error it wraps) was marked by Usage or
// BadInput.
func IsUsage(err error) bool {
	return errors.Is(err, stageerr.ErrUsage) || errors.Is(err, stageerr.ErrBadInput)
}

// isUsageOnly reports whether err blames the flags or arguments, so that
// the message points to --help; bad input data does not.
func isUsageOnly(err error) bool {
	return errors.Is(err, stageerr.ErrUsage) && !errors.Is(err, stageerr.ErrBadInput)
}

// helpCommand is the command whose --help a usage error points to: the one
// ForCommand named, else the binary.
func helpCommand(err error, name string) string {
	var h *helpError
	if errors.As(err, &h) {
		return h.command
	}
	return name
}

// ExitCode is the one mapping from a run's error to the process exit code:
// nil → 0; a stop (context.Canceled, or stageerr.ErrInterrupted, the cause
// SignalContext cancels with) → 130; errors of kind stageerr.ErrUsage or
// stageerr.ErrBadInput → 2; anything else → 1.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, context.Canceled), errors.Is(err, stageerr.ErrInterrupted):
		return ExitInterrupted
	case IsUsage(err):
		return ExitUsage
	}
	return ExitFailure
}

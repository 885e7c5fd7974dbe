package cli

import (
	"context"
	"errors"
	"fmt"
)

// Exit codes shared by every Hone binary.
const (
	ExitOK          = 0
	ExitFailure     = 1   // something went wrong during the run
	ExitUsage       = 2   // bad flags or arguments, or bad input data
	ExitInterrupted = 130 // stopped by SIGINT/SIGTERM (128 + SIGINT)
)

// ErrInterrupted is the cancellation cause set by SignalContext.
var ErrInterrupted = errors.New("interrupted")

// kindError marks an error with the exit code it maps to. It wraps the
// original error so errors.Is/As keep working through it.
type kindError struct {
	code  int
	usage bool   // bad flags or arguments, as opposed to bad input data
	help  string // the command whose --help explains the usage ("" : the binary's)
	err   error
}

func (e *kindError) Error() string { return e.err.Error() }
func (e *kindError) Unwrap() error { return e.err }

// Usage marks err as a usage error (bad flags, arguments, or a refused
// output destination): exit code 2. A nil err stays nil.
func Usage(err error) error {
	if err == nil {
		return nil
	}
	return &kindError{code: ExitUsage, usage: true, err: err}
}

// Usagef is Usage(fmt.Errorf(format, args...)).
func Usagef(format string, args ...any) error {
	return Usage(fmt.Errorf(format, args...))
}

// BadInput marks err as bad input data (a file that does not exist, is not
// Parquet, or fails validation): exit code 2. A nil err stays nil.
func BadInput(err error) error {
	if err == nil {
		return nil
	}
	return &kindError{code: ExitUsage, err: err}
}

// BadInputf is BadInput(fmt.Errorf(format, args...)).
func BadInputf(format string, args ...any) error {
	return BadInput(fmt.Errorf(format, args...))
}

// ForCommand points a usage error (Usage) at the --help of command, the
// binary and subcommand as typed ("hone-collect proxy"), so that the user
// reads the help of the command they got wrong. An error already pointed
// at a command keeps it (the innermost knows best); other errors, nil
// included, are returned as they are.
func ForCommand(command string, err error) error {
	var k *kindError
	if !errors.As(err, &k) || !k.usage || k.help != "" {
		return err
	}
	return &kindError{code: k.code, usage: true, help: command, err: err}
}

// IsUsage reports whether err (or an error it wraps) was marked by Usage or
// BadInput.
func IsUsage(err error) bool {
	var k *kindError
	return errors.As(err, &k) && k.code == ExitUsage
}

// ExitCode is the one mapping from a run's error to the process exit code:
// nil → 0; cancellation (context.Canceled or ErrInterrupted) → 130; errors
// marked by Usage or BadInput → 2; anything else → 1.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, context.Canceled), errors.Is(err, ErrInterrupted):
		return ExitInterrupted
	}
	var k *kindError
	if errors.As(err, &k) {
		return k.code
	}
	return ExitFailure
}

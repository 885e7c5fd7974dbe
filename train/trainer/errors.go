package trainer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
)

// ErrBadInput is matched (errors.Is) by every error of a training run that
// blames what the user handed it: the model folder, --init-adapter, or the
// trajectory and chat files. The CLI maps it to exit code 2 ("bad usage or
// bad input"); other errors are failures of the run (exit code 1).
var ErrBadInput = errors.New("bad input")

// ErrNotFinite is matched by the error that stops a run whose loss,
// gradient or updated weights hold NaN or Inf. Nothing of that step is
// saved; the adapter and optimizer in memory are then unusable.
var ErrNotFinite = errors.New("not finite")

// inputError marks an error as bad input without changing its text, which
// already names the file, row or folder.
type inputError struct{ err error }

func (e *inputError) Error() string        { return e.err.Error() }
func (e *inputError) Unwrap() error        { return e.err }
func (e *inputError) Is(target error) bool { return target == ErrBadInput }

// BadInput marks err as bad input. A nil err stays nil.
func BadInput(err error) error {
	if err == nil {
		return nil
	}
	return &inputError{err}
}

// BadInputf is BadInput(fmt.Errorf(format, args...)).
func BadInputf(format string, args ...any) error {
	return BadInput(fmt.Errorf(format, args...))
}

// Input marks an error from reading one of the run's inputs (the model
// folder, an adapter folder, trajectory files) as bad input, unless the
// system failed rather than the input: a read or permission error (a
// missing file is the input's fault), or a cancellation. A nil err stays
// nil.
func Input(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var errno syscall.Errno
	var perr *fs.PathError
	if (errors.As(err, &errno) || errors.As(err, &perr)) && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return BadInput(err)
}

// notFinite says which quantity of a step went non-finite.
type notFinite struct {
	what   string // "loss", "gradient", "updated weights"
	detail string
}

func (e *notFinite) Error() string {
	verb := "is"
	if e.what == "updated weights" {
		verb = "are"
	}
	return fmt.Sprintf("the %s %s not finite (%s)", e.what, verb, e.detail)
}

func (e *notFinite) Is(target error) bool { return target == ErrNotFinite }

package stageerr

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
)

// The kinds of error; match them with errors.Is.
var (
	// ErrUsage is matched by errors that blame the flags, arguments or
	// option values: exit code 2.
	ErrUsage = errors.New("bad usage")
	// ErrBadInput is matched by errors that blame the input data (a file,
	// a folder, a row): exit code 2.
	ErrBadInput = errors.New("bad input")
	// ErrInterrupted is matched by errors of a run stopped before it was
	// done (its context ended): exit code 130. It is also the cause that
	// cmd/internal/cli's SignalContext cancels with.
	ErrInterrupted = errors.New("interrupted")
)

// kindError marks err with a kind without changing its text, which
// already says what is wrong.
type kindError struct {
	kind error // ErrUsage or ErrBadInput
	err  error
}

func (e *kindError) Error() string { return e.err.Error() }

// Unwrap returns the marked error first, so that errors.As finds what it
// wraps, and the kind, so that errors.Is matches it.
func (e *kindError) Unwrap() []error { return []error{e.err, e.kind} }

func mark(kind, err error) error {
	if err == nil {
		return nil
	}
	return &kindError{kind: kind, err: err}
}

// Usage marks err as a usage error (bad flags, arguments or option
// values). A nil err stays nil.
func Usage(err error) error { return mark(ErrUsage, err) }

// Usagef is Usage(fmt.Errorf(format, args...)).
func Usagef(format string, args ...any) error { return Usage(fmt.Errorf(format, args...)) }

// BadInput marks err as bad input data. A nil err stays nil.
func BadInput(err error) error { return mark(ErrBadInput, err) }

// BadInputf is BadInput(fmt.Errorf(format, args...)).
func BadInputf(format string, args ...any) error { return BadInput(fmt.Errorf(format, args...)) }

// Input marks an error from reading one of a run's inputs (trajectory
// files, a model or adapter folder) as bad input, unless the system failed
// rather than the input: a read or permission error (a missing file is the
// input's fault), or a stop (cancellation, deadline, ErrInterrupted). A nil
// err stays nil.
func Input(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrInterrupted) {
		return err
	}
	var errno syscall.Errno
	var perr *fs.PathError
	if (errors.As(err, &errno) || errors.As(err, &perr)) && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return BadInput(err)
}

package trajectory

import (
	"errors"
	"io/fs"
	"syscall"
)

// ErrBadInput is matched (errors.Is) by every error that says the input
// itself is wrong: a file that is not a trajectory file, a row that fails
// validation, a group split across files, a JSONL line that does not parse.
// Errors that are not bad input come from the operating system (a failing
// disk, a refused permission) or from a cancelled context.
var ErrBadInput = errors.New("trajectory: bad input")

// InputError is the type of every bad-input error the package returns; use
// errors.As to get at the place it names. Its text is the wrapped error's
// text, which already names the place, so adding the type changed no
// message.
type InputError struct {
	File  string // input file name (or JSONL source name); "" when not known
	Row   int64  // row (Parquet) or 1-based line (JSONL); -1 when not known
	Group string // group id; "" when not known
	Field string // offending field, e.g. "messages[2].role"; "" when not known
	Err   error
}

func (e *InputError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *InputError) Unwrap() error { return e.Err }

// Is makes every InputError match ErrBadInput.
func (e *InputError) Is(target error) bool { return target == ErrBadInput }

// badInput wraps err as an InputError at the given place, unless err comes
// from the operating system: a read that failed on disk is not the file's
// fault, even when it surfaced while decoding.
func badInput(file string, row int64, group, field string, err error) error {
	if err == nil || isSystemError(err) {
		return err
	}
	return &InputError{File: file, Row: row, Group: group, Field: field, Err: err}
}

// isSystemError reports operating-system errors other than "does not exist".
func isSystemError(err error) bool {
	var errno syscall.Errno
	var perr *fs.PathError
	return (errors.As(err, &errno) || errors.As(err, &perr)) && !errors.Is(err, fs.ErrNotExist)
}

// fieldError is one failed field check from Validate; it carries the field
// name for InputError.
type fieldError struct {
	field string
	msg   string
}

func (e *fieldError) Error() string { return e.field + ": " + e.msg }

// firstField returns the field of the first field error in err, or "".
func firstField(err error) string {
	var fe *fieldError
	if errors.As(err, &fe) {
		return fe.field
	}
	return ""
}

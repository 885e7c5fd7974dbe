package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hone-rl/hone/format/fileset"
)

// ChooseOutput decides where output goes: to the file path, or to stdout
// when path is "" or "-". Binary output (Parquet) to a terminal is refused
// with a usage error; text (JSON lines, tables) to a terminal is fine.
func ChooseOutput(path string, stdoutIsTerminal, binary bool) (toStdout bool, err error) {
	if path != "" && path != Stdin {
		return false, nil
	}
	if binary && stdoutIsTerminal {
		return true, Usagef("refusing to write Parquet to a terminal: use -o FILE or redirect stdout (> file, | next-stage)")
	}
	return true, nil
}

// Output is an opened output: a fileset.Output for -o PATH (written under
// a temporary name and renamed by Commit), or buffered stdout. Call Commit
// when everything was written; Close without Commit discards a file output
// (stdout cannot be taken back).
type Output struct {
	Name string // the path, or "-" for stdout
	w    io.Writer
	file fileset.Output
	buf  *bufio.Writer
}

// OpenOutput opens path per ChooseOutput, with stdout checked by IsTerminal.
// A path that cannot be an output (a directory, an unknown URL scheme) is a
// usage error; missing parent folders are made (fileset.Create), as the
// README says of -o. An object-store output is checked first
// (fileset.CheckOutputObject, within OutputCheckTimeout): a missing
// bucket or a name that is a folder there is a usage error, no keys bad
// input (both exit 2), any other refusal of the store an error (exit 1).
// ctx ends a wait for a FIFO's reader.
func OpenOutput(ctx context.Context, path string, stdout io.Writer, binary bool) (*Output, error) {
	return openOutput(ctx, path, stdout, binary, OutputCheckTimeout)
}

// OutputCheckTimeout bounds the checks of an object-store output at
// start (a few requests, each answered in well under a second by a store
// that works): a store that takes the connection and never answers held
// the stage's start for ever, before any of its work.
const OutputCheckTimeout = 2 * time.Minute

// openOutput is OpenOutput with the checks of an object-store output
// bounded by checkTimeout.
func openOutput(ctx context.Context, path string, stdout io.Writer, binary bool, checkTimeout time.Duration) (*Output, error) {
	toStdout, err := ChooseOutput(path, IsTerminal(stdout), binary)
	if err != nil {
		return nil, err
	}
	if toStdout {
		buf := bufio.NewWriterSize(stdout, 1<<16)
		return &Output{Name: Stdin, w: buf, buf: buf}, nil
	}
	// An object is uploaded at Commit, after the run: whether the store
	// will take it is asked now, before the run's work.
	if err := checkOutput(ctx, path, checkTimeout); err != nil {
		return nil, err
	}
	// An object is uploaded by Commit, which a stage stopped by a signal
	// still calls to keep the groups finished before the stop: the upload
	// is not the stopped run's to cancel (a second signal exits at once).
	// A local file's ctx ends a wait for a FIFO's reader.
	cctx := ctx
	if fileset.IsURL(path) {
		cctx = context.WithoutCancel(ctx)
	}
	f, err := fileset.Create(cctx, path)
	if errors.Is(err, fileset.ErrBadArgument) {
		return nil, Usage(err)
	}
	if err != nil {
		return nil, err
	}
	// Each SIGKILLed run of a stage left its partial output beside the
	// target; the next run writing the same output clears them. Best
	// effort: they hide from readers, so one left is no error.
	_, _ = fileset.RemoveStaleTemps(path)
	return &Output{Name: path, w: f, file: f}, nil
}

// checkOutput is fileset.CheckOutputObject under checkTimeout, its
// error marked with the exit status it calls for.
func checkOutput(ctx context.Context, path string, checkTimeout time.Duration) error {
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	err := fileset.CheckOutputObject(cctx, path)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fileset.ErrBadArgument):
		return Usage(fmt.Errorf("output %w", err))
	case errors.Is(err, fileset.ErrNoCredentials):
		return BadInputf("output %w", err)
	case ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded):
		// The store's own error is a request cut off, which does not
		// say that the store stopped answering.
		return fmt.Errorf("output %s: the store did not answer its checks within %v: %w", fileset.DisplayName(path), checkTimeout, err)
	}
	return err
}

// Write writes to the output.
func (o *Output) Write(p []byte) (int, error) { return o.w.Write(p) }

// Commit makes the output visible: it renames the file into place, or
// flushes stdout.
func (o *Output) Commit() error {
	if o.file != nil {
		return o.file.Commit()
	}
	if err := o.buf.Flush(); err != nil {
		return fmt.Errorf("write stdout: %w", err)
	}
	return nil
}

// Close discards an uncommitted file output; after Commit it does nothing.
func (o *Output) Close() error {
	if o.file != nil {
		return o.file.Abort()
	}
	return nil
}

// WriteOutput opens the output, calls write, and commits only if write
// returned nil; otherwise the temporary file is removed and write's error
// returned. A stage that wants to keep the groups finished before a
// cancellation writes them, returns nil from write, and returns the
// context's error after WriteOutput.
func WriteOutput(ctx context.Context, path string, stdout io.Writer, binary bool, write func(w io.Writer) error) error {
	out, err := OpenOutput(ctx, path, stdout, binary)
	if err != nil {
		return err
	}
	defer out.Close()
	if err := write(out); err != nil {
		return err
	}
	return out.Commit()
}

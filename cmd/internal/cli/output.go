package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// AtomicFile is an output file written under a temporary name in the target
// directory and renamed over the target by Commit, so a reader sees either
// the old file or the whole new one, never half of it. Abort (or a Commit
// that fails) removes the temporary file; an existing target is untouched
// until Commit succeeds.
type AtomicFile struct {
	f    *os.File
	path string
	done bool
}

// CreateAtomic starts writing path. The temporary file is named
// ".<base>.tmp-<random>" beside it, so rename stays on one file system.
func CreateAtomic(path string) (*AtomicFile, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil, Usagef("output %q is a directory; name a file", path)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, Usagef("output %q: directory %q does not exist", path, dir)
		}
		return nil, fmt.Errorf("create output %q: %w", path, err)
	}
	return &AtomicFile{f: f, path: path}, nil
}

// Write writes to the temporary file.
func (a *AtomicFile) Write(p []byte) (int, error) { return a.f.Write(p) }

// Name is the final path.
func (a *AtomicFile) Name() string { return a.path }

// TempName is the temporary path being written.
func (a *AtomicFile) TempName() string { return a.f.Name() }

// Commit flushes the file to disk and renames it over the target. The new
// file takes the mode of the file it replaces, or 0644.
func (a *AtomicFile) Commit() error {
	if a.done {
		return fmt.Errorf("output %q: already closed", a.path)
	}
	a.done = true
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(a.path); err == nil {
		mode = st.Mode().Perm()
	}
	err := a.f.Chmod(mode)
	if err == nil {
		err = a.f.Sync()
	}
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(a.f.Name(), a.path)
	}
	if err != nil {
		os.Remove(a.f.Name())
		return fmt.Errorf("write output %q: %w", a.path, err)
	}
	syncDir(filepath.Dir(a.path))
	return nil
}

// syncDir makes a rename in dir durable, so that after a crash the new
// file is there or the old one is, whole. Where directories cannot be
// synced (some file systems, Windows) the rename itself still stands.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// Abort closes and removes the temporary file. It does nothing after
// Commit, so `defer out.Abort()` is the usual pattern.
func (a *AtomicFile) Abort() error {
	if a.done {
		return nil
	}
	a.done = true
	a.f.Close()
	if err := os.Remove(a.f.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove temporary output %q: %w", a.f.Name(), err)
	}
	return nil
}

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

// Output is an opened output: an AtomicFile for -o PATH, or buffered
// stdout. Call Commit when everything was written; Close without Commit
// discards a file output (stdout cannot be taken back).
type Output struct {
	Name string // the path, or "-" for stdout
	w    io.Writer
	file *AtomicFile
	buf  *bufio.Writer
}

// OpenOutput opens path per ChooseOutput, with stdout checked by IsTerminal.
func OpenOutput(path string, stdout io.Writer, binary bool) (*Output, error) {
	toStdout, err := ChooseOutput(path, IsTerminal(stdout), binary)
	if err != nil {
		return nil, err
	}
	if toStdout {
		buf := bufio.NewWriterSize(stdout, 1<<16)
		return &Output{Name: Stdin, w: buf, buf: buf}, nil
	}
	f, err := CreateAtomic(path)
	if err != nil {
		return nil, err
	}
	return &Output{Name: path, w: f, file: f}, nil
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
func WriteOutput(path string, stdout io.Writer, binary bool, write func(w io.Writer) error) error {
	out, err := OpenOutput(path, stdout, binary)
	if err != nil {
		return err
	}
	defer out.Close()
	if err := write(out); err != nil {
		return err
	}
	return out.Commit()
}

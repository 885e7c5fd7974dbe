package fileset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Output is an output being written. Nothing is visible under its name
// until Commit; Abort (or a failed Commit) leaves no trace — not even the
// folders Create made for it — and an existing file of that name is
// untouched until Commit succeeds.
type Output interface {
	io.Writer
	// Name is the name being written, as given.
	Name() string
	// Commit makes the whole output visible under its name.
	Commit() error
	// Abort discards the output. It does nothing after Commit, so
	// `defer out.Abort()` is the usual pattern.
	Abort() error
}

// Create starts writing name, a path or URL. Missing parent folders of a
// local path are made (0755), as `mkdir -p` would.
func Create(ctx context.Context, name string) (Output, error) {
	st, err := storeFor(name)
	if err != nil {
		return nil, fmt.Errorf("output %w", err)
	}
	return st.Create(ctx, name)
}

// localOutput is a file written under a temporary name in the target's
// directory (so that the rename stays on one file system) and renamed
// over the target by Commit.
type localOutput struct {
	f    *os.File
	name string   // as given
	path string   // the target on disk
	made []string // folders made for it, deepest first: Abort removes them
	done bool
}

// createLocal starts writing path, making its missing parent folders; the
// temporary file is named ".<base>.tmp-<random>" beside it.
func createLocal(name, path string) (*localOutput, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil, fmt.Errorf("output %w", argErrorf(name, "is a directory; name a file"))
	}
	dir, file := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	made, err := makeParents(filepath.Clean(dir))
	if err != nil {
		removeMade(made)
		if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("output %w", argErrorf(name, "cannot make its folder %q: a file is in the way", dir))
		}
		return nil, fmt.Errorf("create output %q: %w", name, err)
	}
	f, err := os.CreateTemp(dir, "."+file+".tmp-*")
	if err != nil {
		removeMade(made)
		return nil, fmt.Errorf("create output %q: %w", name, err)
	}
	return &localOutput{f: f, name: name, path: path, made: made}, nil
}

// makeParents makes dir and its missing parents, and returns the folders
// it made, deepest first (also when it fails part way).
func makeParents(dir string) ([]string, error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || !errors.Is(err, fs.ErrNotExist) {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	var made []string
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return made, err
		} else if err == nil {
			made = append([]string{missing[i]}, made...)
		}
	}
	// A file where a folder should be fails here, after the loop made what
	// it could.
	if st, err := os.Stat(dir); err != nil {
		return made, err
	} else if !st.IsDir() {
		return made, syscall.ENOTDIR
	}
	return made, nil
}

// removeMade removes the folders makeParents made, deepest first, while
// they are empty: something else written into one meanwhile stays.
func removeMade(made []string) {
	for _, d := range made {
		if os.Remove(d) != nil {
			return
		}
	}
}

func (o *localOutput) Write(p []byte) (int, error) { return o.f.Write(p) }

func (o *localOutput) Name() string { return o.name }

// Commit flushes the file to disk and renames it over the target. The new
// file takes the mode of the file it replaces, or 0644.
func (o *localOutput) Commit() error {
	if o.done {
		return fmt.Errorf("output %q: already closed", o.name)
	}
	o.done = true
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(o.path); err == nil {
		mode = st.Mode().Perm()
	}
	err := o.f.Chmod(mode)
	if err == nil {
		err = o.f.Sync()
	}
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(o.f.Name(), o.path)
	}
	if err != nil {
		os.Remove(o.f.Name())
		removeMade(o.made)
		return fmt.Errorf("write output %q: %w", o.name, err)
	}
	syncDir(filepath.Dir(o.path))
	return nil
}

// syncDir makes a rename in dir durable, so that after a crash the new
// file is there or the old one is, whole. Where directories cannot be
// synced (some file systems) the rename itself still stands.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

func (o *localOutput) Abort() error {
	if o.done {
		return nil
	}
	o.done = true
	o.f.Close()
	if err := os.Remove(o.f.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove temporary output %q: %w", o.f.Name(), err)
	}
	removeMade(o.made)
	return nil
}

package fileset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
// local path are made (0755), as `mkdir -p` would. A local path that is a
// pipe or device (/dev/null, a FIFO), or a process's open file
// (/dev/stdout, /dev/fd/N), is written into directly, as a shell redirect
// writes it, not replaced: what reaches it cannot be taken back. A
// symlink to a file is kept: the file it leads to is replaced.
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
	f, err := createLockedTemp(dir, file)
	if err != nil {
		removeMade(made)
		// The temporary file's name, which the user never wrote, is
		// left out: the folder is what cannot take a file.
		var pe *fs.PathError
		if errors.As(err, &pe) && pe.Op == "open" {
			err = pe.Err
		}
		if path != name {
			return nil, fmt.Errorf("create output %q (leading to %s): cannot make a file in %s: %w", name, path, filepath.Clean(dir), err)
		}
		return nil, fmt.Errorf("create output %q: cannot make a file in %s: %w", name, filepath.Clean(dir), err)
	}
	return &localOutput{f: f, name: name, path: path, made: made}, nil
}

// streamOutput writes into an existing pipe or device (/dev/null,
// /dev/stdout, a FIFO, bash's >(…)) as a shell redirect would: a
// temporary file renamed over it would replace the device with a regular
// file (or fail, in /dev/fd), and its reader would never see a byte. What
// is written cannot be taken back, as with stdout.
type streamOutput struct {
	f    *os.File
	name string
	done bool
}

func openStream(ctx context.Context, name, path string) (*streamOutput, error) {
	if fd, ok := ownFD(path); ok {
		return openFD(name, fd)
	}
	f, err := openWriting(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("open output %q: %w", name, err)
	}
	return &streamOutput{f: f, name: name}, nil
}

// openWriting opens path for writing, as a shell redirect does: a FIFO
// no one reads yet is waited on until a reader opens it, but only until
// ctx is done (a SIGTERM, a Ctrl-C), since the open itself cannot be
// interrupted and would hold the command past its cancellation.
func openWriting(ctx context.Context, path string) (*os.File, error) {
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		ch <- opened{f, err}
	}()
	select {
	case o := <-ch:
		return o.f, o.err
	case <-ctx.Done():
	}
	// Opening the FIFO for reading, which does not wait, ends the
	// writer's wait; what it opened is closed once it returns.
	r, rerr := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	go func() {
		if o := <-ch; o.f != nil {
			o.f.Close()
		}
		if rerr == nil {
			r.Close()
		}
	}()
	return nil, fmt.Errorf("waiting for a reader: %w", context.Cause(ctx))
}

func (o *streamOutput) Write(p []byte) (int, error) {
	n, err := o.f.Write(p)
	if err != nil {
		return n, writeErr(o.name, err)
	}
	return n, nil
}

// writeErr makes a failed write, sync or rename name the output as given:
// the file's own name is the temporary file's, which the user never
// wrote, or the device a symlink leads to (/dev/full). An object's is
// shown without its bucket query (DisplayName).
func writeErr(name string, err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	if errors.As(err, &pe) {
		err = pe.Err
	} else if errors.As(err, &le) {
		err = le.Err
	}
	return fmt.Errorf("write output %q: %w", DisplayName(name), err)
}

func (o *streamOutput) Name() string { return o.name }

// Commit closes the stream; its close error (a pipe's reader gone) is the
// output's.
func (o *streamOutput) Commit() error {
	if o.done {
		return fmt.Errorf("output %q: already closed", o.name)
	}
	o.done = true
	if err := o.f.Close(); err != nil {
		return fmt.Errorf("close output %q: %w", o.name, err)
	}
	return nil
}

// Abort closes the stream; what was written stays written.
func (o *streamOutput) Abort() error {
	if o.done {
		return nil
	}
	o.done = true
	return o.f.Close()
}

// createLockedTemp creates the temporary file ".<file>.tmp-<random>" in
// dir and holds an exclusive flock on it until it is closed: the lock is
// how RemoveStaleTemps tells the temporary file of a live writer from one
// a killed writer left (the kernel drops a dead process's locks). A
// cleaner may remove the file between its creation and the lock; the name
// then no longer leads to it, and another is made.
func createLockedTemp(dir, file string) (*os.File, error) {
	for {
		f, err := os.CreateTemp(dir, "."+file+tempMark+"*")
		if err != nil {
			return nil, err
		}
		if err := flockRetry(f); err != nil {
			// A file system without flock (some FUSE mounts): the file
			// is written unlocked, and RemoveStaleTemps, which cannot
			// lock it either, leaves it alone.
			return f, nil
		}
		held, err1 := f.Stat()
		named, err2 := os.Stat(f.Name())
		if err1 == nil && err2 == nil && os.SameFile(held, named) {
			return f, nil
		}
		f.Close()
		if err2 != nil && errors.Is(err2, fs.ErrNotExist) {
			err2 = nil // removed by a cleaner: make another
		}
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
		}
	}
}

// tempMark follows ".<file>" in the name of an output's temporary file.
const tempMark = ".tmp-"

// RemoveStaleTemps removes the temporary files of the local output name
// (".<file>.tmp-…" beside it) that no live writer holds: what a writer
// killed with SIGKILL (the OOM killer, a lost node) left, which no reader
// takes as output but which each kill adds, as large as the output had
// grown, until the disk fills. A writer's own file, and any another
// process is writing now, are locked and kept. Only regular files are
// removed (a run folder's step folders are format/runfolder's). An object
// store output (an upload, never a file beside the target) has none: it
// returns nil. It returns the names it removed.
func RemoveStaleTemps(name string) ([]string, error) {
	if IsURL(name) {
		return nil, nil
	}
	path, err := LocalPath(name)
	if err != nil {
		return nil, fmt.Errorf("remove stale temporary files: %w", err)
	}
	// The temporary files are beside the file a symlink leads to; a pipe
	// or device is written into, with none.
	path, stream, err := outputTarget(path)
	if err != nil {
		return nil, fmt.Errorf("remove stale temporary files: %w", err)
	}
	if stream {
		return nil, nil
	}
	dir, file := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("remove stale temporary files of %q: %w", name, err)
	}
	var removed []string
	for _, e := range ents {
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), "."+file+tempMark) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if removeIfUnlocked(p) {
			removed = append(removed, p)
		}
	}
	return removed, nil
}

// removeIfUnlocked removes path when no one holds its flock, holding the
// lock while it removes, so that a writer that locks it after cannot
// mistake the removed file for its own (createLockedTemp checks the name).
func removeIfUnlocked(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if !tryFlock(f) {
		return false // a live writer's, or a file system without flock
	}
	return os.Remove(path) == nil
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

func (o *localOutput) Write(p []byte) (int, error) {
	n, err := o.f.Write(p)
	if err != nil {
		return n, writeErr(o.name, err)
	}
	return n, nil
}

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
	// The flock must outlive the Close until the file has its final name:
	// unlocked under its temporary name, it is a killed writer's to
	// another run's RemoveStaleTemps, which would remove the finished
	// output. holdLock keeps it past the Close until release.
	release := holdLock(o.f)
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(o.f.Name(), o.path)
	}
	release()
	if err != nil {
		os.Remove(o.f.Name())
		removeMade(o.made)
		return writeErr(o.name, err)
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

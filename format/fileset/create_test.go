package fileset

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestCreateCommit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.parquet")
	if err := os.WriteFile(path, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	o, err := Create(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if o.Name() != path {
		t.Errorf("Name() = %q", o.Name())
	}
	if _, err := o.Write([]byte("new contents")); err != nil {
		t.Fatal(err)
	}
	// Before Commit a reader sees the old file, whole; the new one is
	// a hidden temporary file beside it (same file system for the rename).
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Fatalf("before commit: %q", got)
	}
	if names := dirNames(t, dir); len(names) != 2 || !strings.HasPrefix(names[0], ".out.parquet.tmp-") {
		t.Fatalf("while writing the folder holds %q", names)
	}
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "new contents" {
		t.Fatalf("after commit: %q", got)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want the replaced file's 0640", st.Mode().Perm())
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("folder holds %q, want only the output", names)
	}
	if err := o.Abort(); err != nil {
		t.Errorf("Abort after Commit: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("Abort after Commit removed the output: %v", err)
	}
	if err := o.Commit(); err == nil {
		t.Error("second Commit succeeded")
	}
}

func TestCreateNewFileMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.parquet")
	o, err := Create(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
}

func TestCreateAbortLeavesNoPartialFile(t *testing.T) {
	dir := t.TempDir()
	for _, existing := range []bool{true, false} {
		path := filepath.Join(dir, "out.parquet")
		os.Remove(path)
		if existing {
			if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		o, err := Create(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		o.Write([]byte("half a fi"))
		if err := o.Abort(); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		switch {
		case existing && string(got) != "old":
			t.Fatalf("existing file clobbered: %q", got)
		case !existing && !errors.Is(err, os.ErrNotExist):
			t.Fatalf("aborted output visible: %q, %v", got, err)
		}
		if names := dirNames(t, dir); len(names) != map[bool]int{true: 1, false: 0}[existing] {
			t.Fatalf("temporary file left: %q", names)
		}
	}
}

// A Commit that fails (here: the target became a directory while the
// output was written) removes the temporary file and reports the name.
func TestCreateFailedCommitLeavesNoPartialFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.parquet")
	o, err := Create(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	o.Write([]byte("whole, but"))
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := o.Commit(); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Commit onto a full directory: %v", err)
	}
	if names := dirNames(t, dir); len(names) != 1 || names[0] != "out.parquet" {
		t.Fatalf("folder holds %q, want only the directory in the way", names)
	}
}

// Missing parent folders are made; Commit keeps them, Abort removes the
// ones Create made (and only those, and only while empty).
func TestCreateMakesParents(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "runs"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "runs", "r1", "eval", "out.parquet")
	o, err := Create(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	o.Write([]byte("data"))
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "data" {
		t.Fatalf("read back %q, %v", b, err)
	}
	if st, err := os.Stat(filepath.Join(dir, "runs", "r1")); err != nil || !st.IsDir() {
		t.Fatalf("made folder: %v %v", st, err)
	}

	aborted := filepath.Join(dir, "runs", "r2", "deep", "out.parquet")
	o, err = Create(context.Background(), aborted)
	if err != nil {
		t.Fatal(err)
	}
	o.Write([]byte("half"))
	if err := o.Abort(); err != nil {
		t.Fatal(err)
	}
	if names := dirNames(t, filepath.Join(dir, "runs")); len(names) != 1 || names[0] != "r1" {
		t.Fatalf("after Abort runs/ holds %q, want only r1 (r2 and r2/deep removed)", names)
	}

	// A folder made for the output that something else wrote into stays.
	o, err = Create(context.Background(), filepath.Join(dir, "runs", "r3", "a", "out.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "runs", "r3", "other"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	o.Abort()
	if names := dirNames(t, filepath.Join(dir, "runs", "r3")); len(names) != 1 || names[0] != "other" {
		t.Fatalf("after Abort runs/r3 holds %q, want only other", names)
	}
}

func TestCreateErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// A socket cannot be opened for writing (ENXIO), and renaming over
	// it would take its server's address away.
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// A link that leads back to itself names no file to write, as a
	// folder does not: bad usage, not a failure to retry.
	loop := filepath.Join(dir, "loop.parquet")
	if err := os.Symlink("loop.parquet", loop); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, mention string }{
		{dir, "is a directory"},
		{loop, "a loop of symbolic links"},
		{sock, "is a socket"},
		{filepath.Join(file, "out.parquet"), "a file is in the way"},
		{filepath.Join(file, "sub", "out.parquet"), "a file is in the way"},
		{"ftp://host/out.parquet", "no support for ftp://"},
	} {
		_, err := Create(context.Background(), tc.name)
		if !errors.Is(err, ErrBadArgument) || !strings.Contains(err.Error(), tc.mention) || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("Create(%q): %v", tc.name, err)
		}
	}
}

// RemoveStaleTemps removes only the unlocked temporary files of the output
// it is given: another output's, a folder of that kind of name (a run
// folder's step being written) and the files of live writers stay.
func TestRemoveStaleTempsOnlyThatOutputs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.parquet")
	live, err := Create(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Abort()
	for _, n := range []string{".out.parquet.tmp-1", ".other.parquet.tmp-1", "out.parquet.tmp-1"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("left by a kill"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, ".out.parquet.tmp-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	removed, err := RemoveStaleTemps("file://" + path)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, ".out.parquet.tmp-1"); len(removed) != 1 || removed[0] != want {
		t.Errorf("removed %q, want only %q", removed, want)
	}
	if _, err := live.Write([]byte("new")); err != nil {
		t.Fatal(err)
	}
	if err := live.Commit(); err != nil {
		t.Fatalf("the live writer's file was taken: %v", err)
	}
	if names := dirNames(t, dir); len(names) != 4 {
		t.Errorf("folder holds %q, want the output, the other output's and the folder", names)
	}
}

// A writer holds its temporary file's lock until the file has its final
// name: a Commit that closed the file (dropping the lock) before renaming
// it let another run's RemoveStaleTemps take the finished output in
// between, and the rename failed with the output lost.
func TestCommitKeepsTheLockUntilRenamed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.parquet")
	stop := make(chan struct{})
	cleaned := make(chan struct{})
	go func() { // another run of the same stage, starting over and over
		defer close(cleaned)
		for {
			select {
			case <-stop:
				return
			default:
				RemoveStaleTemps(path)
			}
		}
	}()
	defer func() { close(stop); <-cleaned }()
	for i := range 300 {
		out, err := Create(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := out.Write([]byte("row")); err != nil {
			t.Fatal(err)
		}
		if err := out.Commit(); err != nil {
			t.Fatalf("commit %d, with another run cleaning: %v", i, err)
		}
	}
}

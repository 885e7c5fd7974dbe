package fileset

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// fifo makes a named pipe in a new folder and writes data into it once, as
// bash's <(…) does; the writer is waited for at the end of the test.
func fifo(t *testing.T, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in.jsonl")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- os.WriteFile(p, []byte(data), 0o600) }()
	t.Cleanup(func() {
		if err := <-done; err != nil {
			t.Errorf("write the pipe: %v", err)
		}
	})
	return p
}

func readFile(t *testing.T, f *File) string {
	t.Helper()
	b, err := io.ReadAll(f.Reader())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPipeInput: a named pipe given as an input (bash's <(…)) is read
// whole, by Open and by every Open of a resolved set, and its copy is gone
// after Close. It was read as an empty file: its Stat size is 0.
func TestPipeInput(t *testing.T) {
	ctx := context.Background()
	const data = "{\"id\":\"a\"}\n{\"id\":\"b\"}\n"

	f, err := Open(ctx, fifo(t, data))
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, f); got != data || f.Size != int64(len(data)) {
		t.Errorf("Open of a pipe read %q (size %d), want %q", got, f.Size, data)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	tmp := t.TempDir()
	p := fifo(t, data)
	s, err := Resolve(ctx, []string{p}, Options{Ext: ".jsonl", TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	// A pipe read again would block for ever (its writer is gone): give
	// the reads a deadline rather than hang the test.
	got := make(chan string, 2)
	go func() {
		for range 2 {
			f, err := s.Open(ctx, 0)
			if err != nil {
				got <- err.Error()
				continue
			}
			b, err := io.ReadAll(f.Reader())
			f.Close()
			if err != nil {
				got <- err.Error()
				continue
			}
			got <- f.Name + ": " + string(b)
		}
	}()
	for i := range 2 {
		select {
		case g := <-got:
			if want := p + ": " + data; g != want {
				t.Errorf("open %d of the set read %q, want %q", i, g, want)
			}
		case <-time.After(time.Minute):
			t.Fatalf("open %d of the set still blocked after a minute: the pipe itself was read again", i)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the copy of the pipe is left after Close: %v", left)
	}
}

// TestHasExt: a name's ending is its path's, without an object store's
// query; a file:// URL keeps its (escaped) "?".
func TestHasExt(t *testing.T) {
	for _, c := range []struct {
		name string
		want bool
	}{
		{"round.parquet", true}, {"s3://b/round.parquet?region=x", true}, {"s3://b/round.jsonl?x=.parquet", false},
		{"-", false}, {"/dev/fd/63", false}, {"dir/round.parquet.tmp", false},
	} {
		if got := HasExt(c.name, ".parquet"); got != c.want {
			t.Errorf("HasExt(%q, .parquet) = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestDisplayName: an object-store URL is shown without its query; a path
// or file:// URL, whose "?" is part of the name, as it is.
func TestDisplayName(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"s3://b/dir/a.parquet?endpoint=http://127.0.0.1:9000&use_path_style=true", "s3://b/dir/a.parquet"},
		{"gs://b/50%3F.parquet", "gs://b/50%3F.parquet"},
		{"dir/what?.parquet", "dir/what?.parquet"},
		{"file:///tmp/a%3F.parquet", "file:///tmp/a%3F.parquet"},
		{"-", "-"},
	} {
		if got := DisplayName(c.name); got != c.want {
			t.Errorf("DisplayName(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

//go:build unix

package collect_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hone-rl/hone/collect"
)

// TestScenariosParquetByContent: a trajectory file given to --scenarios
// under a name that does not end in .parquet, or through a pipe (bash's
// <(…), as README's input rule says for --scenarios; stdin is read the
// same way), is read as Parquet, not as JSON lines.
func TestScenariosParquetByContent(t *testing.T) {
	var out bytes.Buffer
	o := collect.Options{Env: "guess", Groups: 3, GroupSize: 2, Concurrency: 2, Policy: "scripted:bisect", Seed: 5, Out: &out}
	if err := collect.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	named := filepath.Join(dir, "round-1.pq")
	if err := os.WriteFile(named, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	wrote := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0) // returns once the reader opens it
		if err == nil {
			_, err = f.Write(out.Bytes())
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		wrote <- err
	}()
	t.Cleanup(func() { // release the writer if the reader never opened the pipe
		if r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			r.Close()
		}
	})
	for _, path := range []string{named, fifo} {
		scs, err := collect.ReadScenarios(context.Background(), path)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(path), err)
		}
		if len(scs) != 3 || scs[0].ID != "guess-5-0" || scs[0].Env != "guess" || len(scs[0].Payload) == 0 {
			t.Errorf("%s: scenarios %+v; want guess-5-0 … with their payloads", filepath.Base(path), scs)
		}
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
}

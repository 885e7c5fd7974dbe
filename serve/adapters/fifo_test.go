//go:build unix

package adapters

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/internal/waitfor"
)

// TestPollRefusesFIFOAdapterFiles: a step folder whose adapter_config.json
// or adapter_model.safetensors is a named pipe is refused, naming the
// file, and the previous step keeps serving. Before, the poll opened the
// pipe to read it and blocked there for good with no writer: no run was
// polled again (serve/vllm's Sync was fixed for this; the embedded
// server's poll was not).
func TestPollRefusesFIFOAdapterFiles(t *testing.T) {
	c := testConfig(t)
	for step, file := range map[int]string{2: "adapter_config.json", 3: "adapter_model.safetensors"} {
		t.Run(file, func(t *testing.T) {
			root := t.TempDir()
			r, logs := newLogged(root, c)
			run := filepath.Join(root, "exp")
			write(t, c, filepath.Join(run, "step-000001"), 1)
			polls(r, 1)
			dir := filepath.Join(run, runfolder.StepName(step))
			write(t, c, dir, uint64(step))
			p := filepath.Join(dir, file)
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Skipf("no named pipes here: %v", err)
			}
			t.Cleanup(func() {
				// Opened read-write a pipe never blocks, and it lets a
				// poll stuck opening it (the bug) go on, so the test ends.
				if w, err := os.OpenFile(p, os.O_RDWR, 0); err == nil {
					w.Close()
				}
			})
			done := make(chan int, 1)
			go func() { done <- r.Poll(context.Background()) }()
			n := -1
			waitfor.Until(t, 10*time.Second, "Poll to return with a pipe for "+file, func() bool {
				select {
				case n = <-done:
					return true
				default:
					return false
				}
			})
			if n != 0 {
				t.Fatalf("Poll loaded %d adapters, want 0", n)
			}
			if a, _ := r.Resolve("exp"); a == nil || a.Step != 1 {
				t.Fatalf("exp = %+v, want step 1 still", a)
			}
			if k := logs.count(slog.LevelError, msgRefused, "err", p+" is not a regular file"); k != 1 {
				t.Fatalf("%d refusals naming %s as not a regular file, want 1:\n%s", k, p, logs)
			}
		})
	}
}

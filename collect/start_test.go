//go:build unix

package collect_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hone-rl/hone/collect"
	"github.com/hone-rl/hone/internal/stageerr"
)

// TestRunCancelDuringEnvStart: a stop (Ctrl-C) while an environment
// program starts ends the run at once, as an interruption, instead of
// waiting out the start-up timeout. The program (an MCP server or a stdio
// environment) says it runs through a FIFO, then never answers.
func TestRunCancelDuringEnvStart(t *testing.T) {
	for _, name := range []string{"stdio", "mcp"} {
		t.Run(name, func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "started")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			started := make(chan error, 1)
			go func() {
				f, err := os.Open(fifo) // returns once the program opens it to write
				if err == nil {
					_, err = io.ReadAll(f)
					f.Close()
				}
				started <- err
			}()
			t.Cleanup(func() { // release the reader if the program never ran
				if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					w.Close()
				}
			})

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var out bytes.Buffer
			o := collect.Options{Env: name, Groups: 1, GroupSize: 1, Concurrency: 1, Policy: "scripted", Out: &out,
				EnvOpts: map[string]string{"cmd": fmt.Sprintf(`sh -c 'echo up > %s; exec sleep 600'`, fifo)}}
			done := make(chan error, 1)
			go func() {
				err := collect.Run(ctx, o)
				done <- err
			}()
			select {
			case err := <-started:
				if err != nil {
					t.Fatal(err)
				}
			case err := <-done:
				t.Fatalf("Run ended before the program started: %v", err)
			}
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, stageerr.ErrInterrupted) || errors.Is(err, stageerr.ErrUsage) {
					t.Fatalf("Run: %v; want an interruption, not a usage error", err)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("Run still starting the environment 15s after the stop")
			}
		})
	}
}

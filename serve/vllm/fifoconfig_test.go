//go:build unix

package vllm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/waitfor"
)

// TestSyncRefusesFIFOConfig: a step folder whose adapter_config.json is a
// named pipe (or a device) is refused, naming the file, without vLLM being
// asked; "<run>" stays on the previous step. Before, Sync opened the pipe
// to read it and blocked there for good, with no writer: no run was synced
// again.
func TestSyncRefusesFIFOConfig(t *testing.T) {
	fake, f, dir := newFixture(t, Options{KeepAdapters: 2})
	ctx := context.Background()
	p1 := writeStep(t, dir, "r", 1)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls(), load("r@1", p1))
	p2 := writeStep(t, dir, "r", 2)
	cfg := filepath.Join(p2, "adapter_config.json")
	if err := os.Remove(cfg); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Opened read-write a pipe never blocks, and it lets a Sync stuck
		// opening it (the bug) go on, so the test ends.
		if w, err := os.OpenFile(cfg, os.O_RDWR, 0); err == nil {
			w.Close()
		}
	})
	done := make(chan error, 1)
	go func() { done <- f.Sync(ctx) }()
	var err error
	waitfor.Until(t, 10*time.Second, "Sync to return with a pipe for adapter_config.json", func() bool {
		select {
		case err = <-done:
			return true
		default:
			return false
		}
	})
	if err == nil || !strings.Contains(err.Error(), cfg) || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("Sync = %v; want a refusal naming %s as not a regular file", err, cfg)
	}
	wantCalls(t, fake.takeCalls())
	wantModel(t, f, "r", "r@1")
}

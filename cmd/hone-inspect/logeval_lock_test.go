package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/waitfor"
)

// TestLogEvalReadsOptionsUnderTheLock: log-eval read the run's
// --best-metric, --best-mode and --keep-last before it waited for the
// run's lock, then pruned by them; a hone-train --resume holding the lock
// may change them (and records the new ones in the run's config), so
// log-eval named best and pruned by options the run no longer has. Here
// the test holds the lock and, while log-eval waits, changes --best-mode
// from max to min as such a resume does.
func TestLogEvalReadsOptionsUnderTheLock(t *testing.T) {
	rl := evalRun(t, 3) // --best-metric val/reward (max), --keep-last 1
	dir := t.TempDir()
	p1, p2 := filepath.Join(dir, "s1.parquet"), filepath.Join(dir, "s2.parquet")
	evalFile(t, p1, "rl@1", f(1))
	evalFile(t, p2, "rl@2", f(0))
	mustRun(t, nil, "log-eval", "--run", rl.Dir, p1)

	unlock, err := rl.Lock()
	if err != nil {
		t.Fatal(err)
	}
	var stderr waitfor.Buffer
	cmd := exec.Command(binary, "log-eval", "--run", rl.Dir, p2)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		unlock()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() }) // a failed wait leaves it waiting for the lock
	waitfor.Until(t, time.Minute, "log-eval waiting for the run's lock", func() bool {
		return strings.Contains(stderr.String(), "waiting for the run's lock")
	})
	cfg, err := json.MarshalIndent(map[string]any{"run": "rl", "best_metric": "val/reward", "best_mode": "min", "keep_last": 1}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	err = rl.WriteConfig(3, append(cfg, '\n'))
	unlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("log-eval: %v\n%s", err, stderr.String())
	}
	// By min, step 2 (val/reward 0) is best and step 1 goes; by max it was
	// the other way round.
	if b, ok, err := rl.Best(); err != nil || !ok || b != 2 {
		t.Errorf("best %d (%v %v), want 2, the lowest val/reward", b, ok, err)
	}
	if steps, _ := rl.Steps(); !slices.Equal(steps, []int{2, 3}) {
		t.Errorf("steps %v, want [2 3]", steps)
	}
}

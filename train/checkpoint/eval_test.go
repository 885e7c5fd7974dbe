package checkpoint

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/internal/waitfor"
)

func TestLogEvalMergesSplits(t *testing.T) {
	r := &Run{Dir: t.TempDir()}
	for _, c := range []struct {
		step  int
		split string
		m     map[string]float64
	}{
		{3, "val", map[string]float64{"reward": 0.5, "found": 1}},
		{1, "val", map[string]float64{"reward": 0.25}},
		{3, "test", map[string]float64{"reward": 0.75}},
		// Logged again: replaces val's metrics of step 3, "found" included.
		{3, "val", map[string]float64{"reward": 0.625}},
	} {
		if err := r.LogEval(c.step, c.split, c.m); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(r.Dir, runfolder.EvalName))
	if err != nil {
		t.Fatal(err)
	}
	want := "{\"step\":1,\"val/reward\":0.25}\n{\"step\":3,\"test/reward\":0.75,\"val/reward\":0.625}\n"
	if string(b) != want {
		t.Errorf("eval.jsonl:\n%s\nwant:\n%s", b, want)
	}
	rows, err := r.ReadEval()
	if err != nil || len(rows) != 2 || rows[3]["test/reward"] != 0.75 {
		t.Errorf("ReadEval: %v %v", rows, err)
	}
}

func TestLogEvalRefuses(t *testing.T) {
	r := &Run{Dir: t.TempDir()}
	for _, split := range []string{"", "Val", "val/x", "../x"} {
		if err := r.LogEval(1, split, map[string]float64{"reward": 1}); err == nil {
			t.Errorf("split %q accepted", split)
		}
	}
	if err := r.LogEval(-1, "val", nil); err == nil {
		t.Error("negative step accepted")
	}
	os.WriteFile(filepath.Join(r.Dir, runfolder.EvalName), []byte("{\"step\":1}\n{\"step\":1}\n"), 0o644)
	if _, err := r.ReadEval(); err == nil || !strings.Contains(err.Error(), "eval.jsonl:2: a second row for step 1") {
		t.Errorf("duplicate step: %v", err)
	}
	os.WriteFile(filepath.Join(r.Dir, runfolder.EvalName), []byte("{\"val/reward\":1}\n"), 0o644)
	if _, err := r.ReadEval(); err == nil || !strings.Contains(err.Error(), "eval.jsonl:1:") {
		t.Errorf("row without a step: %v", err)
	}
}

func TestIsEvalMetric(t *testing.T) {
	for name, want := range map[string]bool{"val/reward": true, "test/found": true, "val-greedy/reward": true,
		"reward_mean": false, "loss": false, "/x": false, "Val/x": false} {
		if got := IsEvalMetric(name); got != want {
			t.Errorf("IsEvalMetric(%q) = %v", name, got)
		}
	}
}

// TestPruneByEvalMetric: with an eval metric the best pointer follows
// eval.jsonl, steps not yet evaluated are kept whatever --keep-last says,
// and evaluated steps that are neither recent nor best go.
func TestPruneByEvalMetric(t *testing.T) {
	r := &Run{Dir: t.TempDir()}
	save := func(step int) {
		t.Helper()
		// reward_mean rises with the step: the training metric would pick the last.
		st := State{Step: step, Metrics: map[string]float64{"reward_mean": float64(step)}}
		if err := r.Save(adapter(), nil, st, nil); err != nil {
			t.Fatal(err)
		}
	}
	for s := 1; s <= 4; s++ {
		save(s)
	}
	if err := r.Prune(1, "val/reward", true); err != nil {
		t.Fatal(err)
	}
	if steps, _ := r.Steps(); len(steps) != 4 {
		t.Errorf("nothing evaluated yet: steps %v, want all 4 kept", steps)
	}
	if _, ok, _ := r.Best(); ok {
		t.Error("best written before any eval")
	}
	for s, v := range map[int]float64{1: 0.2, 2: 0.9, 3: 0.4} {
		if err := r.LogEval(s, "val", map[string]float64{"reward": v}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Prune(1, "val/reward", true); err != nil {
		t.Fatal(err)
	}
	steps, _ := r.Steps()
	if len(steps) != 2 || steps[0] != 2 || steps[1] != 4 {
		t.Errorf("after prune: %v, want [2 4] (best, and latest not yet evaluated)", steps)
	}
	if b, ok, _ := r.Best(); !ok || b != 2 {
		t.Errorf("best %d %v, want 2", b, ok)
	}
	// Min mode, and a step evaluated lower than the best: best moves to it.
	save(5)
	if err := r.LogEval(5, "val", map[string]float64{"reward": 0.1}); err != nil {
		t.Fatal(err)
	}
	if err := r.Prune(0, "val/reward", false); err != nil {
		t.Fatal(err)
	}
	if b, ok, _ := r.Best(); !ok || b != 5 {
		t.Errorf("min mode: best %d %v, want 5", b, ok)
	}
}

func TestLockWait(t *testing.T) {
	r := &Run{Dir: t.TempDir()}
	unlock, err := r.Lock()
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	got := make(chan error, 1)
	go func() {
		u, err := r.LockWait(context.Background(), time.Millisecond, func() { close(waited) })
		if u != nil {
			u()
		}
		got <- err
	}()
	<-waited
	select {
	case err := <-got:
		t.Fatalf("LockWait returned while the lock was held: %v", err)
	default:
	}
	unlock()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	// A context that ends stops the wait.
	unlock, _ = r.Lock()
	defer unlock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := r.LockWait(ctx, time.Millisecond, nil); done <- err }()
	cancel()
	var werr error
	if !waitfor.Within(10*time.Second, func() bool {
		select {
		case werr = <-done:
			return true
		default:
			return false
		}
	}) || !errors.Is(werr, context.Canceled) {
		t.Errorf("LockWait after cancel: %v", werr)
	}
}

// RepairEval drops the rows of steps after the step a run resumes from,
// keeps the others (and a line it cannot read) as they are, and rewrites
// the file only when a row goes.
func TestRepairEval(t *testing.T) {
	r := &Run{Dir: t.TempDir()}
	path := filepath.Join(r.Dir, runfolder.EvalName)
	if got, err := r.RepairEval(1); err != nil || got != nil {
		t.Fatalf("no eval.jsonl: %v, %v", got, err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("RepairEval made %s (%v)", path, err)
	}
	in := "{\"step\":0,\"val/reward\":0.1}\n{\"step\":1,\"val/reward\":0.2}\nnot json\n{\"step\":2,\"val/reward\":0.3}\n{\"step\":3,\"val/reward\":0.4}\n"
	if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := r.RepairEval(1)
	if err != nil || len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Fatalf("RepairEval(1) dropped %v, %v; want [2 3]", got, err)
	}
	b, err := os.ReadFile(path)
	if want := "{\"step\":0,\"val/reward\":0.1}\n{\"step\":1,\"val/reward\":0.2}\nnot json\n"; err != nil || string(b) != want {
		t.Errorf("eval.jsonl after RepairEval(1):\n%s\nwant:\n%s", b, want)
	}
	if got, err := r.RepairEval(1); err != nil || got != nil {
		t.Errorf("second RepairEval(1): %v, %v; want nothing dropped", got, err)
	}
	ents, err := os.ReadDir(r.Dir)
	if err != nil || len(ents) != 1 {
		t.Errorf("run folder holds %v (%v); want eval.jsonl alone, no temporary file", ents, err)
	}
}

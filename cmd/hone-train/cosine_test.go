package main

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// TestCosineCountsSkippedSteps runs hone-train grpo as a process with
// --lr-schedule cosine on groups of which one has equal rewards (nothing
// to train: its steps take no optimizer update). The schedule's horizon is
// --steps, as num_training_steps is in transformers'
// get_cosine_schedule_with_warmup, where every step is a scheduler step:
// each trained step's learning rate is that of its step number, the first
// warmed up, the last one step short of --min-lr. Before, the schedule
// counted optimizer updates, so each skipped step held the cosine back and
// the run ended well above --min-lr.
func TestCosineCountsSkippedSteps(t *testing.T) {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	in := filepath.Join(dir, "three.parquet")
	var gs []trajectory.Group
	for g := range 3 {
		grp := trajectory.Group{ID: fmt.Sprintf("g%d", g)}
		for i := range 2 {
			r := float64(i)
			if g == 2 {
				r = 1 // equal rewards: no advantage, nothing to train
			}
			grp.Trajectories = append(grp.Trajectories, trajectory.Trajectory{
				ID: fmt.Sprintf("g%d-%d", g, i), GroupID: grp.ID, Reward: trajectory.Float64(r),
				Messages: []trajectory.Message{
					{Role: "user", Content: "go"},
					{Role: "assistant", Content: fmt.Sprintf("mv%d", i), Trainable: true, TokenIDs: []int32{'m', 'v', '0' + int32(i), 258}, Logprobs: []float32{-1, -1, -1, -1}, FinishReason: "stop"},
				},
			})
		}
		gs = append(gs, grp)
	}
	if err := trajectory.WriteFile(context.Background(), in, gs, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	const lr, minLR, warmup, steps = 1e-3, 1e-4, 2, 9
	// transformers' cosine with a floor (get_cosine_with_min_lr_schedule_with_warmup)
	// at 0-based step k, with Hone's warm-up, which trains its first update.
	want := func(k int) float64 {
		if k < warmup {
			return lr * float64(k+1) / warmup
		}
		p := float64(k-warmup) / float64(steps-warmup)
		return minLR + (lr-minLR)*(1+math.Cos(math.Pi*p))/2
	}
	out := filepath.Join(dir, "adapters")
	code, text := runMain(t, "grpo", "--model", md, "--run", "cos", "--out", out, "--rank", "2", "--threads", "1",
		"--groups-per-step", "1", "--steps", fmt.Sprint(steps), "--lr", fmt.Sprint(lr), "--lr-schedule", "cosine",
		"--warmup-steps", fmt.Sprint(warmup), "--min-lr", fmt.Sprint(minLR), in)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, text)
	}
	rows := stepMetrics(t, filepath.Join(out, "cos"))
	if len(rows) != steps {
		t.Fatalf("%d metrics rows, want %d", len(rows), steps)
	}
	skippedBefore, checked := false, 0
	for _, r := range rows {
		k := int(r["step"].(float64)) - 1
		got, trained := r["lr"].(float64)
		if !trained {
			skippedBefore = true
			continue
		}
		if math.Abs(got-want(k)) > 1e-12*lr {
			t.Errorf("step %d (skipped steps before it: %v): lr %v, want %v", k+1, skippedBefore, got, want(k))
		}
		checked++
	}
	if last := rows[steps-1]; last["lr"] == nil || !skippedBefore || checked < 3 {
		t.Fatalf("the run must train its last step, after a skipped one (and 3 steps in all) for this test to tell: %v", rows)
	}
}

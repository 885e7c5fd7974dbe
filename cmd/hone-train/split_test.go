package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/train/checkpoint"
)

// writeSplits writes path: one group of 3 scored trajectories per entry of
// splits, each trajectory of the group in that split, or each in its own
// where the entry lists three ("train,val,train").
func writeSplits(t *testing.T, path string, splits ...string) {
	t.Helper()
	name := strings.TrimSuffix(filepath.Base(path), ".parquet")
	var gs []trajectory.Group
	for g, split := range splits {
		grp := trajectory.Group{ID: fmt.Sprintf("%s-%d", name, g)}
		rowSplits := strings.Split(split, ",")
		for i := range 3 {
			if len(rowSplits) == 3 {
				split = rowSplits[i]
			}
			ids := []int32{'m', 'v', '0' + int32(i), 258}
			grp.Trajectories = append(grp.Trajectories, trajectory.Trajectory{
				ID: fmt.Sprintf("%s-%d-%d", name, g, i), GroupID: grp.ID, Split: split, Reward: trajectory.Float64(float64(i)),
				Messages: []trajectory.Message{
					{Role: "user", Content: "go"},
					{Role: "assistant", Content: fmt.Sprintf("mv%d", i), Trainable: true, TokenIDs: ids, Logprobs: []float32{-1, -1, -1, -1}, FinishReason: "stop"},
				},
			})
		}
		gs = append(gs, grp)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := trajectory.WriteFile(context.Background(), path, gs, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
}

// stepMetrics reads the run's metrics.jsonl: one map per step.
func stepMetrics(t *testing.T, run string) []map[string]any {
	t.Helper()
	f, err := os.Open(filepath.Join(run, runfolder.MetricsName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, m)
	}
	return rows
}

// TestGRPOLeavesOutHeldOutSplits runs hone-train grpo as a process on a
// file whose groups are in splits train, val and test: only the train
// group is trained, and one warning names how many rows were left out and
// the first of them. A file of val rows alone is refused (exit 2) saying
// why there is nothing to train, rather than trained.
func TestGRPOLeavesOutHeldOutSplits(t *testing.T) {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	mixed := filepath.Join(dir, "in", "mixed.parquet")
	writeSplits(t, mixed, "train", "val", "test", "")
	out := filepath.Join(dir, "adapters")
	code, msg := runMain(t, "grpo", "--model", md, "--run", "mixed", "--out", out, "--rank", "2", "--threads", "1", mixed)
	if code != 0 {
		t.Fatalf("grpo on train, val and test groups: exit %d\n%s", code, msg)
	}
	want := fmt.Sprintf("6 of 12 trajectories are in split val or test and are left out of training (held-out data): %s row 3 (group mixed-1, trajectory mixed-1-0)", mixed)
	if !strings.Contains(msg, want) || strings.Count(msg, "held-out data") != 1 {
		t.Errorf("output lacks the one warning %q:\n%s", want, msg)
	}
	rows := stepMetrics(t, filepath.Join(out, "mixed"))
	if len(rows) != 1 || rows[0]["trajectories"] != 6.0 || rows[0]["groups"] != 2.0 {
		t.Errorf("step metrics %v: want 2 groups, 6 trajectories (the train split's and the unlabelled)", rows)
	}

	val := filepath.Join(dir, "in", "val.parquet")
	writeSplits(t, val, "val", "val")
	code, msg = runMain(t, "grpo", "--model", md, "--run", "val", "--out", out, "--rank", "2", "--threads", "1", val)
	if code != cli.ExitUsage || !strings.Contains(msg, "all 6 trajectories of "+val+" are in split val or test") {
		t.Errorf("grpo on val rows alone: exit %d, want %d saying they are held out\n%s", code, cli.ExitUsage, msg)
	}
	if _, err := os.Stat(filepath.Join(out, "val")); !os.IsNotExist(err) {
		t.Errorf("a refused input left a run folder (%v)", err)
	}
}

// TestWatchLeavesOutHeldOutSplits: in --watch-dir mode a file of val rows
// beside a file of train rows is not trained; a later call that finds only
// a new file of test rows trains nothing, records it as consumed (so that
// no later call reads it again) and exits 0.
func TestWatchLeavesOutHeldOutSplits(t *testing.T) {
	dir := t.TempDir()
	watch := filepath.Join(dir, "scored")
	md := scoredFixture(t, dir, watch, "r1")
	writeSplits(t, filepath.Join(watch, "v1.parquet"), "val")
	out := filepath.Join(dir, "adapters")
	grpo := func() (int, string) {
		return runMain(t, "grpo", "--model", md, "--run", "w", "--out", out, "--rank", "2", "--threads", "1", "--steps", "1", "--watch-dir", watch)
	}
	if code, msg := grpo(); code != 0 || !strings.Contains(msg, "3 of 9 trajectories are in split val or test") {
		t.Fatalf("first call: exit %d, want 0 with the held-out warning\n%s", code, msg)
	}
	run := filepath.Join(out, "w")
	if rows := stepMetrics(t, run); len(rows) != 1 || rows[0]["trajectories"] != 6.0 {
		t.Fatalf("step metrics %v: want one step of r1's 6 trajectories", rows)
	}
	writeSplits(t, filepath.Join(watch, "t2.parquet"), "test")
	code, msg := grpo()
	if code != 0 || !strings.Contains(msg, "nothing to train") {
		t.Fatalf("a call with only held-out rows new: exit %d, want 0 saying nothing to train\n%s", code, msg)
	}
	man, err := (&checkpoint.Run{Dir: run}).ReadManifest()
	if err != nil || len(man.Consumed) != 3 || man.Pending != nil {
		t.Fatalf("manifest consumed %+v pending %+v (%v): want r1, v1 and t2 consumed", man.Consumed, man.Pending, err)
	}
	if rows := stepMetrics(t, run); len(rows) != 1 {
		t.Errorf("%d steps after the held-out call, want 1", len(rows))
	}
	if code, msg := grpo(); code != 0 || !strings.Contains(msg, "nothing new") {
		t.Errorf("third call: exit %d, want 0 with nothing new\n%s", code, msg)
	}
}

// TestSFTLeavesOutHeldOutSplits: hone-train sft leaves val and test rows
// out with one warning, and refuses a file of held-out rows alone.
func TestSFTLeavesOutHeldOutSplits(t *testing.T) {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	mixed := filepath.Join(dir, "in", "mixed.parquet")
	writeSplits(t, mixed, "test", "train")
	out := filepath.Join(dir, "adapters")
	code, msg := runMain(t, "sft", "--model", md, "--run", "warm", "--out", out, "--rank", "2", "--threads", "1", "--steps", "1", "--batch-size", "0", mixed)
	if code != 0 {
		t.Fatalf("sft: exit %d\n%s", code, msg)
	}
	want := fmt.Sprintf("3 of 6 trajectories are in split val or test and are left out of training (held-out data): %s row 0 (group mixed-0, trajectory mixed-0-0)", mixed)
	if !strings.Contains(msg, want) || strings.Count(msg, "held-out data") != 1 {
		t.Errorf("output lacks the one warning %q:\n%s", want, msg)
	}
	if rows := stepMetrics(t, filepath.Join(out, "warm")); len(rows) != 1 || rows[0]["conversations"] != 3.0 {
		t.Errorf("step metrics %v: want one step of the 3 train conversations", rows)
	}
	val := filepath.Join(dir, "in", "val.parquet")
	writeSplits(t, val, "val")
	code, msg = runMain(t, "sft", "--model", md, "--run", "val", "--out", out, "--rank", "2", "--threads", "1", val)
	if code != cli.ExitUsage || !strings.Contains(msg, "all 3 trajectories of "+val+" are in split val or test") {
		t.Errorf("sft on val rows alone: exit %d, want %d saying they are held out\n%s", code, cli.ExitUsage, msg)
	}
}

// TestHeldOutSplitWithinGroupRefused: a group is one scenario's attempts,
// and a scenario is in one split. A group of train and val rows trained
// its train rows on the val scenario (the data that later judges the
// step) with advantages from part of the group, and said only that some
// rows were held out; grpo and sft now refuse it (exit 2), naming the
// group and a row of each kind, and train nothing.
func TestHeldOutSplitWithinGroupRefused(t *testing.T) {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	in := filepath.Join(dir, "in", "m.parquet")
	writeSplits(t, in, "train", "train,val,train")
	out := filepath.Join(dir, "adapters")
	want := fmt.Sprintf("group m-1 has %s row 4 (trajectory m-1-1) in split val and %s row 3 (trajectory m-1-0) in split train", in, in)
	for _, cmd := range []string{"grpo", "sft"} {
		code, msg := runMain(t, cmd, "--model", md, "--run", cmd, "--out", out, "--rank", "2", "--threads", "1", "--steps", "1", in)
		if code != cli.ExitUsage || !strings.Contains(msg, want) {
			t.Errorf("%s on a group of train and val rows: exit %d, want %d naming %q\n%s", cmd, code, cli.ExitUsage, want, msg)
		}
		if _, err := os.Stat(filepath.Join(out, cmd)); !os.IsNotExist(err) {
			t.Errorf("%s: a refused input left a run folder (%v)", cmd, err)
		}
	}
}

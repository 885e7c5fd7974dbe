package grpojob

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/train/checkpoint"
	"github.com/hone-rl/hone/train/trainer"
)

// squares gives group g rewards around 10·g² (differing within the group),
// so a step's reward_mean tells which groups it trained on.
func squares(g, i int) float64 { return float64(10*g*g) + float64(i%2) }

// TestResumeWithNewFilesIsANewSession: a run resumed with other trajectory
// files continues (same adapter, same optimizer) as a new session whose
// data order is seeded by --seed plus the session's index and whose
// --steps count its own steps; the same files again continue their
// session; other option changes are refused naming the option.
func TestResumeWithNewFilesIsANewSession(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	a, b := filepath.Join(dir, "a.parquet"), filepath.Join(dir, "b.parquet")
	writeGroups(t, md, a, 2, 3, varied)
	writeGroups(t, md, b, 4, 3, squares)
	out := filepath.Join(dir, "adapters")
	o := baseOptions(md, out, "r", a) // 2 groups per step: one step on a
	o.Seed = 5
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	run := &checkpoint.Run{Dir: filepath.Join(out, "r")}

	round2 := o
	round2.Inputs = baseOptions(md, out, "r", b).Inputs
	err := runWith(context.Background(), backend(t), round2, textLog(&log))
	if !errors.Is(err, stageerr.ErrUsage) || !strings.Contains(err.Error(), "pass --resume") {
		t.Fatalf("round 2 without --resume: %v, want a usage error saying --resume", err)
	}
	round2.Resume = true
	log.Reset()
	if err := runWith(context.Background(), backend(t), round2, textLog(&log)); err != nil {
		t.Fatalf("round 2: %v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), `msg="new session of the run" session=1 files=1 first_step=2 last_step=3`) {
		t.Errorf("round 2 log:\n%s", log.String())
	}
	st, err := run.ReadState(3)
	if err != nil || st.Step != 3 || st.OptimizerStep != 3 {
		t.Fatalf("after round 2: state %+v, %v; want step 3 after 3 optimizer updates", st, err)
	}
	// Session 1's order is Order{Seed: 5+1}: its first step's groups.
	rows := readMetrics(t, run.Dir)
	if len(rows) != 3 {
		t.Fatalf("%d metrics rows, want 3", len(rows))
	}
	meanOf := func(seed uint64) float64 {
		var sum float64
		for _, g := range (trainer.Order{N: 4, PerStep: 2, Seed: seed}).Items(0) {
			sum += (squares(g, 0) + squares(g, 1) + squares(g, 2)) / 3
		}
		return sum / 2
	}
	if math.Abs(meanOf(6)-meanOf(5)) < 1 {
		t.Fatal("seeds 5 and 6 pick the same first groups: the fixture cannot tell the seeds apart")
	}
	if got := rows[1]["reward_mean"]; math.Abs(got-meanOf(6)) > 1e-9 {
		t.Errorf("session 1's first step trained groups of reward mean %v, want %v (seed 5+1)", got, meanOf(6))
	}

	// The same files and options again: nothing to do.
	log.Reset()
	if err := runWith(context.Background(), backend(t), round2, textLog(&log)); err != nil || !strings.Contains(log.String(), "nothing to do") {
		t.Errorf("round 2 again: %v\n%s", err, log.String())
	}
	if n, _, _ := run.Latest(); n != 3 {
		t.Errorf("round 2 again moved latest to %d", n)
	}

	// Another option is refused, naming only it.
	bad := round2
	bad.LR = 2e-2
	err = runWith(context.Background(), backend(t), bad, textLog(&log))
	if !errors.Is(err, stageerr.ErrUsage) || !strings.Contains(err.Error(), `option "lr" differs: run has 0.01, command gives 0.02`) ||
		strings.Contains(err.Error(), "inputs") || strings.Contains(err.Error(), "{") || strings.Count(err.Error(), "differs") != 1 {
		t.Errorf("resume with another --lr: %v", err)
	}

	// a again, for 2 steps: session 2, steps 4 and 5.
	round3 := round2
	round3.Inputs, round3.Steps = baseOptions(md, out, "r", a).Inputs, 2
	if err := runWith(context.Background(), backend(t), round3, textLog(&log)); err != nil {
		t.Fatalf("round 3: %v\n%s", err, log.String())
	}
	if n, _, _ := run.Latest(); n != 5 {
		t.Errorf("round 3 (--steps 2) ended at step %d, want 5", n)
	}
	man, err := run.ReadManifest()
	if err != nil {
		t.Fatal(err)
	}
	ha, _ := checkpoint.HashFile(context.Background(), a)
	hb, _ := checkpoint.HashFile(context.Background(), b)
	want := []struct {
		sum        string
		start, end int
	}{{ha.SHA256, 0, 1}, {hb.SHA256, 1, 3}, {ha.SHA256, 3, 5}}
	if len(man.Sessions) != len(want) {
		t.Fatalf("manifest sessions %+v, want %d", man.Sessions, len(want))
	}
	for i, w := range want {
		s := man.Sessions[i]
		if s.Index != i || len(s.Files) != 1 || s.Files[0].SHA256 != w.sum || s.StartStep != w.start || s.EndStep != w.end {
			t.Errorf("session %d = %+v, want sha256 %s, steps %d..%d", i, s, w.sum, w.start, w.end)
		}
	}
}

// TestResumeWithTrainedFilesWarns: a session whose files include one an
// earlier session trained (a folder named each round, holding the earlier
// rounds' files) trains it again, as asked, but says so, naming that file
// and not the new one; a session of new files alone says nothing.
func TestResumeWithTrainedFilesWarns(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	a, b, c := filepath.Join(dir, "a.parquet"), filepath.Join(dir, "b.parquet"), filepath.Join(dir, "c.parquet")
	writeGroups(t, md, a, 2, 3, varied)
	writeGroups(t, md, b, 2, 3, squares)
	writeGroups(t, md, c, 4, 3, squares)
	out := filepath.Join(dir, "adapters")
	o := baseOptions(md, out, "r", a)
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	o.Resume = true
	o.Inputs = baseOptions(md, out, "r", b).Inputs
	log.Reset()
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("round 2: %v\n%s", err, log.String())
	}
	if strings.Contains(log.String(), "trained again") {
		t.Errorf("a session of new files warned:\n%s", log.String())
	}
	o.Inputs = baseOptions(md, out, "r", a, c).Inputs
	warn, text := runLastWarn(t, o, "round 3", "trained again")
	if !strings.Contains(warn, a+" (trained in session 0 (steps 1-1))") || strings.Contains(warn, c) || !strings.Contains(warn, "--watch-dir") {
		t.Errorf("round 3 (a again, and c) warned %q; want a warning naming a and its session, not c, and pointing to --watch-dir\n%s", warn, text)
	}
}

// TestSessionContinuedIsBitIdentical: a session stopped early (--steps 1)
// and continued with the same files (--steps 2) ends where one command
// with --steps 2 does.
func TestSessionContinuedIsBitIdentical(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	a, b := filepath.Join(dir, "a.parquet"), filepath.Join(dir, "b.parquet")
	writeGroups(t, md, a, 2, 3, varied)
	writeGroups(t, md, b, 4, 3, squares)
	out := filepath.Join(dir, "adapters")
	var log bytes.Buffer
	for _, name := range []string{"whole", "split"} {
		o := baseOptions(md, out, name, a)
		if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
			t.Fatalf("%v\n%s", err, log.String())
		}
		o.Inputs, o.Resume, o.Steps = baseOptions(md, out, name, b).Inputs, true, 2
		if name == "split" {
			o.Steps = 1
			if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
				t.Fatalf("%v\n%s", err, log.String())
			}
			o.Steps = 2
		}
		if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
			t.Fatalf("%v\n%s", err, log.String())
		}
	}
	for _, f := range []string{"adapter_model.safetensors", checkpoint.OptimizerName} {
		x, err := os.ReadFile(filepath.Join(out, "whole", runfolder.StepName(3), f))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(filepath.Join(out, "split", runfolder.StepName(3), f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between one session command and the same session continued", f)
		}
	}
}

// TestScaleLRByRewardStdNewSession: --scale-lr-by-reward-std fits the
// reward std of every step of the run, so the first step of a second
// session (a resume with new files) fits the steps of the first session
// as they were recorded, then its own. It used to index the new session's
// data order at negative steps for them, and panicked.
func TestScaleLRByRewardStdNewSession(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	a, b := filepath.Join(dir, "a.parquet"), filepath.Join(dir, "b.parquet")
	spread := func(g, i int) float64 { return float64(i * (g + 1)) } // group std grows with g
	writeGroups(t, md, a, 3, 3, spread)
	writeGroups(t, md, b, 3, 3, func(g, i int) float64 { return spread(g+3, i) })
	out := filepath.Join(dir, "adapters")
	o := baseOptions(md, out, "r", a)
	o.GroupsPerStep, o.Steps, o.ScaleLRByRewardStd, o.LR = 1, 2, true, 1e-3
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("session 0: %v\n%s", err, log.String())
	}
	o.Inputs, o.Resume, o.Steps = baseOptions(md, out, "r", b).Inputs, true, 1
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("session 1: %v\n%s", err, log.String())
	}
	rows := readMetrics(t, filepath.Join(out, "r"))
	if len(rows) != 3 {
		t.Fatalf("%d metrics rows, want 3", len(rows))
	}
	var y []float64
	for _, r := range rows {
		y = append(y, r["reward_group_std"])
	}
	want := o.LR * rewardStdLRScale(y)
	if want == o.LR {
		t.Fatalf("reward stds %v fit a flat line: the fixture cannot tell the history apart", y)
	}
	if got := rows[2]["lr"]; math.Abs(got-want) > 1e-12 {
		t.Errorf("session 1's first step took lr %v, want %v (the fit over the run's reward stds %v)", got, want, y)
	}
}

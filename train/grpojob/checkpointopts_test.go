package grpojob

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/train/checkpoint"
)

// savedOptions decodes the checkpoint options and the lr of the run's
// latest train_config.json, the file hone-inspect log-eval reads them from.
type savedOptions struct {
	SaveEvery  int     `json:"save_every"`
	KeepLast   int     `json:"keep_last"`
	BestMetric string  `json:"best_metric"`
	BestMode   string  `json:"best_mode"`
	LR         float64 `json:"lr"`
}

func latestOptions(t *testing.T, run *checkpoint.Run) (savedOptions, []byte) {
	t.Helper()
	last, ok, err := run.Latest()
	if err != nil || !ok {
		t.Fatalf("latest: %v %v", ok, err)
	}
	b, err := run.ReadConfig(last)
	if err != nil {
		t.Fatal(err)
	}
	var c savedOptions
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c, b
}

// fourSteps trains run "r" for 4 steps of one group each, keeping every
// step, and returns its options and folder.
func fourSteps(t *testing.T) (Options, *checkpoint.Run) {
	t.Helper()
	dir := t.TempDir()
	md := tinyModel(t, dir)
	in := filepath.Join(dir, "a.parquet")
	writeGroups(t, md, in, 4, 3, squares)
	o := baseOptions(md, dir, "r", in)
	o.GroupsPerStep, o.Steps = 1, 4
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	return o, &checkpoint.Run{Dir: filepath.Join(dir, "r")}
}

// TestResumeChangesCheckpointOptions: --keep-last, --best-metric and
// --best-mode change nothing a step computes, and README's "Best step by
// a validation split" adds them to the loop's --resume command; they were
// refused (option "keep_last" differs, exit 2). They become the run's:
// its saved config records them, best is named again by the new metric
// and mode, the steps are pruned by the new --keep-last, and one log line
// names each change. A change of another option is still refused, and
// changes nothing.
func TestResumeChangesCheckpointOptions(t *testing.T) {
	o, run := fourSteps(t)
	_, before := latestOptions(t, run)
	o.Resume = true
	o.KeepLast, o.BestMetric, o.BestMode = 1, "reward_mean", "min"
	o.LR = 2e-2
	var log bytes.Buffer
	err := runWith(context.Background(), backend(t), o, textLog(&log))
	if err == nil || !strings.Contains(err.Error(), `option "lr" differs`) || strings.Contains(err.Error(), "keep_last") ||
		!strings.Contains(err.Error(), "--keep-last, --best-metric and --best-mode may change") {
		t.Errorf("resume with another lr and --keep-last: %v; want lr refused, keep_last not named, and the options that may change listed", err)
	}
	if _, after := latestOptions(t, run); !bytes.Equal(after, before) {
		t.Errorf("a refused resume rewrote the saved config:\n%s\nwas\n%s", after, before)
	}
	if steps, _ := run.Steps(); len(steps) != 4 {
		t.Errorf("a refused resume left steps %v, want all 4", steps)
	}

	o.LR = baseOptions("", "", "").LR
	log.Reset()
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("resume with --keep-last 1 --best-metric reward_mean --best-mode min: %v\n%s", err, log.String())
	}
	got, after := latestOptions(t, run)
	if want := (savedOptions{SaveEvery: 1, KeepLast: 1, BestMetric: "reward_mean", BestMode: "min", LR: o.LR}); got != want {
		t.Errorf("saved options after the resume %+v, want %+v", got, want)
	}
	var x, y map[string]any
	if err := json.Unmarshal(before, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(after, &y); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"keep_last", "best_metric", "best_mode"} {
		delete(x, k)
		delete(y, k)
	}
	if bx, _ := json.Marshal(x); !bytes.Equal(bx, mustJSON(t, y)) {
		t.Errorf("the resume changed other keys of the saved config:\n%s\nwas\n%s", after, before)
	}
	// The lowest reward_mean of the run's metrics rows is best; it and
	// latest are the steps kept.
	rows := readMetrics(t, run.Dir)
	best := 0
	for _, r := range rows {
		if best == 0 || r["reward_mean"] < rows[best-1]["reward_mean"] {
			best = int(r["step"])
		}
	}
	if b, ok, err := run.Best(); err != nil || !ok || b != best {
		t.Errorf("best is %d (%v %v), want step %d, the lowest reward_mean of %v", b, ok, err, best, rows)
	}
	want := []int{best, 4}
	if best == 4 {
		want = []int{4}
	}
	if steps, _ := run.Steps(); !slices.Equal(steps, want) {
		t.Errorf("steps after the resume %v, want %v (best and latest)", steps, want)
	}
	lines := 0
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, "other checkpoint options") {
			lines++
			for _, w := range []string{`keep_last="0 -> 1"`, `best_metric="\"\" -> \"reward_mean\""`, `best_mode="\"max\" -> \"min\""`, "best=" + runfolder.StepName(best)} {
				if !strings.Contains(l, w) {
					t.Errorf("the log line lacks %s: %s", w, l)
				}
			}
			if strings.Contains(l, "save_every") {
				t.Errorf("the log line names save_every, which did not change: %s", l)
			}
		}
	}
	if lines != 1 {
		t.Errorf("%d log lines name the changed options, want 1:\n%s", lines, log.String())
	}

	// The same options again change nothing and say nothing.
	log.Reset()
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "other checkpoint options") {
		t.Errorf("a resume with the run's own options logs a change:\n%s", log.String())
	}
	// Without a --best-metric the run names no best step.
	o.BestMetric, o.BestMode = "", ""
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatal(err)
	}
	if b, ok, err := run.Best(); err != nil || ok {
		t.Errorf("after dropping --best-metric best names step %d (%v %v), want none", b, ok, err)
	}
	if got, _ := latestOptions(t, run); got.BestMetric != "" || got.BestMode != "max" {
		t.Errorf("saved options after dropping --best-metric %+v", got)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestResumeChangesToEvalBestMetric: README's recipe on a run that
// started without it: --best-metric val/reward --keep-last 1 on --resume
// names the best step by the eval rows the run has, keeps the steps not
// yet evaluated, and prunes the rest.
func TestResumeChangesToEvalBestMetric(t *testing.T) {
	o, run := fourSteps(t)
	for s, v := range map[int]float64{1: 0.25, 2: 0.75} {
		if err := run.LogEval(s, "val", map[string]float64{"reward": v}); err != nil {
			t.Fatal(err)
		}
	}
	o.Resume, o.KeepLast, o.BestMetric = true, 1, "val/reward"
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if b, ok, err := run.Best(); err != nil || !ok || b != 2 {
		t.Errorf("best is %d (%v %v), want step 2 (val/reward 0.75)", b, ok, err)
	}
	// Step 1 is evaluated and not best; 3 is not evaluated yet; 4 is latest.
	if steps, _ := run.Steps(); !slices.Equal(steps, []int{2, 3, 4}) {
		t.Errorf("steps %v, want [2 3 4]", steps)
	}
	if got, _ := latestOptions(t, run); got.BestMetric != "val/reward" || got.KeepLast != 1 || got.BestMode != "max" {
		t.Errorf("saved options %+v", got)
	}
}

// TestResumeWithOtherSaveEveryIsBitIdentical: a run resumed with another
// --save-every, --keep-last and --best-metric ends with the adapter and
// optimizer state of the run trained in one go.
func TestResumeWithOtherSaveEveryIsBitIdentical(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	in := filepath.Join(dir, "a.parquet")
	writeGroups(t, md, in, 4, 3, squares)
	out := filepath.Join(dir, "adapters")
	var log bytes.Buffer
	for _, name := range []string{"whole", "split"} {
		o := baseOptions(md, out, name, in)
		o.GroupsPerStep, o.Steps = 1, 4
		if name == "split" {
			o.Steps = 1
			if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
				t.Fatalf("%v\n%s", err, log.String())
			}
			o.Resume, o.Steps, o.SaveEvery, o.KeepLast, o.BestMetric = true, 4, 2, 1, "loss"
		}
		if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, log.String())
		}
	}
	for _, f := range []string{"adapter_model.safetensors", checkpoint.OptimizerName} {
		x, err := os.ReadFile(filepath.Join(out, "whole", runfolder.StepName(4), f))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(filepath.Join(out, "split", runfolder.StepName(4), f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between the run trained in one go and the one resumed with other checkpoint options", f)
		}
	}
	split := &checkpoint.Run{Dir: filepath.Join(out, "split")}
	if got, _ := latestOptions(t, split); got.SaveEvery != 2 || got.KeepLast != 1 || got.BestMetric != "loss" || got.BestMode != "min" {
		t.Errorf("saved options %+v", got)
	}
	// Saved: steps 1 (before the resume), 2 and 4 (--save-every 2); kept:
	// the lowest loss of those and latest.
	if steps, _ := split.Steps(); len(steps) > 2 || !slices.Contains(steps, 4) || slices.Contains(steps, 3) {
		t.Errorf("steps %v, want latest and the best of 1, 2, 4", steps)
	}
}

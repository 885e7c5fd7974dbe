package grpojob

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/train/checkpoint"
)

// Moving latest back by hand and resuming redoes the later steps; the
// eval rows logged for them evaluated the adapters that are being
// replaced, so resuming drops them (and says so), keeping the rows up to
// the step it resumes from. They used to stay: the redone step 2 then
// had step 2's old val/reward, which --best-metric took for its result.
// A best pointer naming a redone step goes too.
func TestResumeFromEarlierStepDropsLaterEvalRows(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	in := filepath.Join(dir, "a.parquet")
	writeGroups(t, md, in, 2, 3, varied)
	o := baseOptions(md, dir, "r", in)
	o.GroupsPerStep, o.Steps = 1, 2
	if err := runWith(context.Background(), backend(t), o, nil); err != nil {
		t.Fatal(err)
	}
	run := &checkpoint.Run{Dir: filepath.Join(dir, "r")}
	for s, v := range map[int]float64{1: 0.25, 2: 0.75} {
		if err := run.LogEval(s, "val", map[string]float64{"reward": v}); err != nil {
			t.Fatal(err)
		}
	}
	if err := runfolder.WritePointer(run.Dir, runfolder.LatestName, 1); err != nil {
		t.Fatal(err)
	}
	// best named the step redone: it goes with that step's eval row.
	if err := runfolder.WritePointer(run.Dir, checkpoint.BestName, 2); err != nil {
		t.Fatal(err)
	}
	o.Resume = true
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if last, _, err := run.Latest(); err != nil || last != 2 {
		t.Fatalf("after the redo latest is %d (%v), want 2", last, err)
	}
	rows, err := run.ReadEval()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[1]["val/reward"] != 0.25 {
		t.Errorf("eval rows after redoing step 2: %v, want step 1's alone", rows)
	}
	if !strings.Contains(log.String(), "dropped the eval rows") || !strings.Contains(log.String(), "eval_steps=[2]") {
		t.Errorf("the log does not say which eval rows went:\n%s", log.String())
	}
	if best, ok, err := run.Best(); err != nil || ok {
		t.Errorf("after redoing step 2, best names step %d (%v, %v); want no best until one is evaluated", best, ok, err)
	}
	if !strings.Contains(log.String(), "removed the best pointer") {
		t.Errorf("the log does not say best went:\n%s", log.String())
	}
}

package grpojob

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hone-rl/hone/train/checkpoint"
	"github.com/hone-rl/hone/train/trainer"
)

// TestHugeLRStopsBeforeSaving: --lr 1e30 without clipping sends the
// weights and then the loss to NaN or Inf; the run stops with an error
// naming the step and what went non-finite, that step has no folder,
// latest names the step before, and the metrics hold one row per saved
// step (the JSON writing is not what fails).
func TestHugeLRStopsBeforeSaving(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	in := filepath.Join(dir, "a.parquet")
	writeGroups(t, md, in, 4, 4, varied)
	o := baseOptions(md, dir, "nan", in)
	o.LR, o.MaxGradNorm, o.Steps = 1e30, 0, 6
	var log bytes.Buffer
	err := runWith(context.Background(), backend(t), o, textLog(&log))
	if !errors.Is(err, trainer.ErrNotFinite) {
		t.Fatalf("run: %v, want a non-finite error\n%s", err, log.String())
	}
	m := regexp.MustCompile(`^step (\d+): the (loss|gradient|updated weights) (is|are) not finite .*lower --lr`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("error %q does not name the step and the non-finite quantity", err)
	}
	bad, _ := strconv.Atoi(m[1])
	run := &checkpoint.Run{Dir: filepath.Join(dir, "nan")}
	if _, err := os.Stat(run.StepDir(bad)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the failed step's folder %s exists (%v)", run.StepDir(bad), err)
	}
	last, ok, lerr := run.Latest()
	if lerr != nil || ok != (bad > 1) || last != bad-1 {
		t.Errorf("latest %d %v %v, want step %d", last, ok, lerr, bad-1)
	}
	if bad > 1 {
		if rows := readMetrics(t, run.Dir); len(rows) != bad-1 {
			t.Errorf("%d metrics rows, want %d", len(rows), bad-1)
		}
		// A resume keeps --lr: the advice says how to go on with another.
		if !strings.Contains(err.Error(), "--init-adapter "+run.StepDir(bad-1)) {
			t.Errorf("error %q does not say how to go on from step %d with other options", err, bad-1)
		}
	}
	t.Logf("%v", err)
}

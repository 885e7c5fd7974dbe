package grpojob

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/train/internal/changingfile"
)

// TestInputChangedWhileReadIsRefused: an input file whose contents change
// between the run's readings of it is refused, naming it, before anything
// is saved. The run decoded one version and hashed the next, so its
// session recorded as trained contents it never trained, and the same
// command given those contents then took them as done.
func TestInputChangedWhileReadIsRefused(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	a, b := filepath.Join(dir, "a.parquet"), filepath.Join(dir, "b.parquet")
	writeGroups(t, md, a, 2, 4, varied)
	writeGroups(t, md, b, 3, 4, varied)
	first, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	second, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "round.parquet")
	changingfile.Serve(t, in, first, second)
	o := baseOptions(md, filepath.Join(dir, "adapters"), "r", in)
	o.Steps = 1
	err = runWith(context.Background(), backend(t), o, nil)
	if err == nil || !strings.Contains(err.Error(), in) || !strings.Contains(err.Error(), "changed while it was read") {
		t.Fatalf("run on an input that changed: %v, want an error naming %s as changed", err, in)
	}
	if _, err := os.Stat(filepath.Join(dir, "adapters", "r", runfolder.LatestName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused run saved a step (%v)", err)
	}
}

// TestMissingInputIsBadInput: an input file gone by the time the run reads
// it is bad input (exit code 2), naming it, as the load reported it before
// the inputs were hashed first.
func TestMissingInputIsBadInput(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	in := filepath.Join(dir, "gone.parquet")
	o := baseOptions(md, filepath.Join(dir, "adapters"), "r", in)
	o.Steps = 1
	err := runWith(context.Background(), backend(t), o, nil)
	if !errors.Is(err, stageerr.ErrBadInput) || !strings.Contains(err.Error(), in) {
		t.Fatalf("run on a missing input: %v, want bad input naming %s", err, in)
	}
}

package sft

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/train/internal/changingfile"
)

// TestInputChangedWhileReadIsRefused: an input file whose contents change
// between the run's readings of it is refused, naming it, before anything
// is saved. The run trained one version and saved the next one's sha256
// as its inputs_sha256, so a resume on that version passed as the same
// data.
func TestInputChangedWhileReadIsRefused(t *testing.T) {
	dir, md, data := setup(t)
	first, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "round.jsonl")
	changingfile.Serve(t, in, first, append(first, first...))
	err = warmRun(t, dir, md, in)(1, false)
	if err == nil || !strings.Contains(err.Error(), in) || !strings.Contains(err.Error(), "changed while it was read") {
		t.Fatalf("run on an input that changed: %v, want an error naming %s as changed", err, in)
	}
	if _, err := os.Stat(filepath.Join(dir, "warm", runfolder.LatestName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused run saved a step (%v)", err)
	}
}

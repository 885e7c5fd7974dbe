package grpojob

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/stageerr"
)

// TestBestMetricCheckedAgainstTheInputs: an eval --best-metric SPLIT/NAME
// whose NAME is an environment metric must be one the input trajectories
// report; a misspelt one is a usage error that names the metrics there
// are, from files and from --watch-dir alike, and leaves no step behind.
func TestBestMetricCheckedAgainstTheInputs(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	in := filepath.Join(dir, "a.parquet")
	writeGroups(t, md, in, 2, 2, varied)
	gs, err := trajectory.ReadFile(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	for g := range gs {
		for i := range gs[g].Trajectories {
			gs[g].Trajectories[i].Metrics = map[string]float64{"found": float64(i)}
		}
	}
	watch := filepath.Join(dir, "watch")
	if err := os.Mkdir(watch, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{in, filepath.Join(watch, "a.parquet")} {
		if err := trajectory.WriteFile(context.Background(), p, gs, trajectory.WriterOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "adapters")
	for _, tc := range []struct {
		run, best string
		watch     bool
		bad       bool
	}{
		{"found", "val/found", false, false},
		{"own", "val-greedy/reward_std_dev", false, false},
		{"fond", "val/fond", false, true},
		{"wfond", "val/fond", true, true},
	} {
		o := baseOptions(md, out, tc.run, in)
		if tc.watch {
			o = baseOptions(md, out, tc.run)
			o.WatchDir = watch
		}
		o.BestMetric, o.Steps = tc.best, 1
		err := runWith(context.Background(), backend(t), o, nil)
		if !tc.bad {
			if err != nil {
				t.Errorf("--best-metric %s: %v", tc.best, err)
			}
			continue
		}
		if !errors.Is(err, stageerr.ErrUsage) || !strings.Contains(err.Error(), `"fond" is neither`) || !strings.Contains(err.Error(), "(val/found)") {
			t.Errorf("--best-metric %s (watch %v): %v, want a usage error listing val/found", tc.best, tc.watch, err)
		}
		if _, err := os.Stat(filepath.Join(out, tc.run, runfolder.LatestName)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a refused run saved a step (%v)", err)
		}
	}
}

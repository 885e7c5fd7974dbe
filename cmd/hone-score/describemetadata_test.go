package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// TestMissingNameListsMetadata: a formula's error for a name the row
// lacks lists what the row has, but named only group metrics, metrics
// and components: spt == "hard", a misspelt metadata key, was told
// nothing of the metadata the row and its group carry. The list now
// names the row's metadata keys and the group's, in the same style.
func TestMissingNameListsMetadata(t *testing.T) {
	dir := t.TempDir()
	in := oneGroupEdited(t, dir, "g.parquet", func(gs []trajectory.Group) {
		gs[0].Metadata = map[string]string{"split": "hard", "level": "3"}
		for i := range gs[0].Trajectories {
			gs[0].Trajectories[i].Metadata = map[string]string{"task": "t", "seed": "1"}
		}
	})
	out := filepath.Join(dir, "out.parquet")
	r := runBin(t, nil, nil, "-o", out, "--scorer", `f=formula:spt == "hard" ? 1 : 0`, in)
	if r.code == 0 || !strings.Contains(r.stderr, `no metric or component named "spt"`) ||
		!strings.Contains(r.stderr, "; metadata seed, task; group metadata level, split)") {
		t.Errorf("a misspelt metadata key: exit %d, want a failure listing the metadata keys:\n%s", r.code, r.stderr)
	}
}

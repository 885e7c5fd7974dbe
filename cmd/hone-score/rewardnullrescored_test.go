package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// TestFormulaRewardNullOnRescoredRow: a row whose reward was null when
// hone-score first scored it has no env component; re-scored, a first
// formula reads reward as the environment's, which the row lacks. The
// error said "the row's reward is null", beside a file whose reward is
// the earlier run's (1 here): it now says the row has no environment
// reward and that a first formula reads that, not the earlier run's.
func TestFormulaRewardNullOnRescoredRow(t *testing.T) {
	dir := t.TempDir()
	noEnv := oneGroupEdited(t, dir, "noenv.parquet", func(gs []trajectory.Group) {
		gs[0].Trajectories[1].Reward = nil
	})
	scored := filepath.Join(dir, "scored.parquet")
	if r := runBin(t, nil, nil, "-o", scored, "--scorer", "one=formula:1", noEnv); r.code != 0 {
		t.Fatalf("first scoring: exit %d:\n%s", r.code, r.stderr)
	}
	r := runBin(t, nil, nil, "-o", filepath.Join(dir, "out.parquet"), "--scorer", "double=formula:reward*2", scored)
	if r.code != 2 || !strings.Contains(r.stderr, `trajectory "g0-1"`) || strings.Contains(r.stderr, "the row's reward is null") ||
		!strings.Contains(r.stderr, "no environment reward") || !strings.Contains(r.stderr, "formula:1 gave") {
		t.Fatalf("exit %d, want 2 saying g0-1 has no environment reward, which a first formula reads, not the one formula:1 gave:\n%s", r.code, r.stderr)
	}
}

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// TestFormulaRewardRescoredSame re-scores a file in place, three times,
// with a chain whose first formula reads reward, the reward so far. On a
// row scored before, that was the earlier run's reward (the one the
// chain writes as previous, which a formula is refused), not the
// environment's: reward*2 gave 2, then 4, then 8. The chain now starts
// from the environment's reward (the env component) on every run, as on
// the first, and a row whose first scoring found none reads it as null.
func TestFormulaRewardRescoredSame(t *testing.T) {
	dir := t.TempDir()
	in := scenario(t, dir, "in.parquet", 0, 1, 2)
	noEnv := oneGroupEdited(t, dir, "noenv.parquet", func(gs []trajectory.Group) {
		gs[0].Trajectories[1].Reward = nil
	})
	for _, c := range []struct {
		in      string
		scorers []string
		want    []float64 // per row, on every run
	}{
		{in, []string{"double=formula:reward*2"}, []float64{2, 0}},
		{in, []string{"double=formula:reward*2", "plus=formula:reward + 1"}, []float64{3, 1}},
		{noEnv, []string{"double=formula:(reward ?? 5)*2"}, []float64{2, 10}},
	} {
		p := filepath.Join(dir, "rescored.parquet")
		data, err := os.ReadFile(c.in)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for run := 1; run <= 3; run++ {
			args := []string{"-o", p}
			for _, s := range c.scorers {
				args = append(args, "--scorer", s)
			}
			if r := runBin(t, nil, nil, append(args, p)...); r.code != 0 {
				t.Fatalf("%q run %d: exit %d:\n%s", c.scorers, run, r.code, r.stderr)
			}
			for i, tr := range readBack(t, p)[0].Trajectories {
				if tr.Reward == nil || *tr.Reward != c.want[i] {
					got := "null"
					if tr.Reward != nil {
						got = fmt.Sprint(*tr.Reward)
					}
					t.Fatalf("%q run %d: row %d reward %s, want %v (components %v)", c.scorers, run, i, got, c.want[i], tr.RewardComponents)
				}
			}
		}
	}
}

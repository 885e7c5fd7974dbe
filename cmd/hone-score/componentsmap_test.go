package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestFormulaComponentsMapRescoredSame re-scores a file in place, twice,
// with a formula that reads the components map as a whole
// (sum(values(components))). The map held the formula's own value from
// the run before and the previous component, which a constant read of
// either is refused for: each re-scoring doubled the reward (1, 2, 4).
// The map now holds only what the formula may read (env, the scorers
// before it, components an earlier chain wrote that this one does not),
// so the same chain gives the same reward however often it runs.
func TestFormulaComponentsMapRescoredSame(t *testing.T) {
	dir := t.TempDir()
	in := scenario(t, dir, "in.parquet", 0, 1, 2)
	for _, c := range []struct {
		scorers []string
		want    []float64 // per row: env (win) summed as the formula says
	}{
		{[]string{"total=formula:sum(values(components))"}, []float64{1, 0}},
		// A later scorer's component is hidden too, and a component
		// an earlier chain wrote that this one does not is read.
		{[]string{"a=formula:len(components) + sum(values(components))", "b=formula:a * 10"}, []float64{20, 10}},
	} {
		p := filepath.Join(dir, "rescored.parquet")
		data, err := os.ReadFile(in)
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
			gs := readBack(t, p)
			for i, tr := range gs[0].Trajectories {
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

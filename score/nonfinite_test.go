package score_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/hone-rl/hone/internal/stageerr"
)

// An environment reward that is NaN or ±Inf (as a file written by other
// tools can hold) is bad input for the env scorer, like a missing one:
// written through, it would make the whole group's advantages NaN in
// training.
func TestEnvRewardNotFinite(t *testing.T) {
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		gs := groups(1, 2)
		gs[0].Trajectories[1].Reward = &bad
		in := writeInput(t, "in.parquet", gs)
		opts := baseOpts(t)
		opts.Scorers = []string{"env"}
		_, out, _, err := run(t, opts, in)
		if !errors.Is(err, stageerr.ErrBadInput) || !strings.Contains(err.Error(), `trajectory "g0-t1"`) {
			var got []float64
			for _, g := range out {
				for _, tr := range g.Trajectories {
					got = append(got, *tr.Reward)
				}
			}
			t.Fatalf("reward %v: err = %v, rewards written %v; want bad input naming g0-t1", bad, err, got)
		}
	}
}

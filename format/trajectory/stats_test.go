package trajectory

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
)

// naiveSummary is the two-pass textbook computation Stats must agree with.
func naiveSummary(ts []Trajectory, groups int64) Summary {
	s := Summary{Groups: groups, Trajectories: int64(len(ts))}
	var xs []float64
	for _, t := range ts {
		if t.Error != "" {
			s.Errors++
		}
		for _, m := range t.Messages {
			s.Tokens += int64(len(m.TokenIDs))
		}
		for _, h := range t.AdditionalHistories {
			for _, m := range h.Messages {
				s.Tokens += int64(len(m.TokenIDs))
			}
		}
		if t.Reward == nil {
			s.Reward.Unscored++
			continue
		}
		xs = append(xs, *t.Reward)
	}
	s.Reward.Scored = int64(len(xs))
	if len(xs) == 0 {
		return s
	}
	s.Reward.Min, s.Reward.Max = xs[0], xs[0]
	var sum float64
	for _, x := range xs {
		sum += x
		s.Reward.Min, s.Reward.Max = math.Min(s.Reward.Min, x), math.Max(s.Reward.Max, x)
	}
	s.Reward.Mean = sum / float64(len(xs))
	if len(xs) > 1 {
		var ss float64
		for _, x := range xs {
			ss += (x - s.Reward.Mean) * (x - s.Reward.Mean)
		}
		s.Reward.Std = math.Sqrt(ss / float64(len(xs)-1))
	}
	return s
}

func summariesClose(a, b Summary) bool {
	ra, rb := a.Reward, b.Reward
	a.Reward, b.Reward = RewardSummary{}, RewardSummary{}
	return a == b && ra.Scored == rb.Scored && ra.Unscored == rb.Unscored &&
		closeEnough(ra.Mean, rb.Mean) && closeEnough(ra.Std, rb.Std) && ra.Min == rb.Min && ra.Max == rb.Max
}

func TestStatsMatchNaive(t *testing.T) {
	for _, shape := range []struct{ groups, size int }{{1, 1}, {2, 3}, {7, 5}, {17, 4}} {
		groups := sampleGroups(uint64(shape.groups), shape.groups, shape.size)
		path := writeTemp(t, "s.parquet", groups, WriterOptions{RowGroupBytes: 4096})
		r, err := Open(context.Background(), fileset.Files(path))
		if err != nil {
			t.Fatal(err)
		}
		st, err := ComputeStats(context.Background(), r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		var all []Trajectory
		var histories, messages, trainable int64
		byStep := map[int64][]Trajectory{}
		stepGroups := map[int64]int64{}
		byEnv := map[string][]Trajectory{}
		envGroups := map[string]int64{}
		for _, g := range groups {
			seenS, seenE := map[int64]bool{}, map[string]bool{}
			for _, tr := range g.Trajectories {
				all = append(all, tr)
				histories += int64(len(tr.AdditionalHistories))
				for _, ms := range append([][]Message{tr.Messages}, historyMessages(tr)...) {
					messages += int64(len(ms))
					for _, m := range ms {
						if m.Trainable {
							trainable++
						}
					}
				}
				byStep[tr.Step] = append(byStep[tr.Step], tr)
				byEnv[tr.Env] = append(byEnv[tr.Env], tr)
				if !seenS[tr.Step] {
					seenS[tr.Step] = true
					stepGroups[tr.Step]++
				}
				if !seenE[tr.Env] {
					seenE[tr.Env] = true
					envGroups[tr.Env]++
				}
			}
		}
		if want := naiveSummary(all, int64(len(groups))); !summariesClose(st.Summary, want) {
			t.Errorf("%d×%d total:\n got  %+v\n want %+v", shape.groups, shape.size, st.Summary, want)
		}
		if histories == 0 {
			t.Fatalf("%d×%d: the sample has no additional histories to count", shape.groups, shape.size)
		}
		if st.AdditionalHistories != histories || st.Messages != messages || st.TrainableTurns != trainable {
			t.Errorf("%d×%d: additional histories %d, messages %d, trainable turns %d; want %d, %d, %d", shape.groups, shape.size,
				st.AdditionalHistories, st.Messages, st.TrainableTurns, histories, messages, trainable)
		}
		if len(st.ByStep) != len(byStep) || len(st.ByEnv) != len(byEnv) || len(st.Files) != 1 {
			t.Fatalf("%d steps, %d envs, %d files", len(st.ByStep), len(st.ByEnv), len(st.Files))
		}
		for i, s := range st.ByStep {
			if i > 0 && st.ByStep[i-1].Step >= s.Step {
				t.Errorf("steps not sorted")
			}
			if want := naiveSummary(byStep[s.Step], stepGroups[s.Step]); !summariesClose(s.Summary, want) {
				t.Errorf("step %d:\n got  %+v\n want %+v", s.Step, s.Summary, want)
			}
		}
		for _, e := range st.ByEnv {
			if want := naiveSummary(byEnv[e.Env], envGroups[e.Env]); !summariesClose(e.Summary, want) {
				t.Errorf("env %q:\n got  %+v\n want %+v", e.Env, e.Summary, want)
			}
		}
	}
}

func historyMessages(t Trajectory) [][]Message {
	var out [][]Message
	for _, h := range t.AdditionalHistories {
		out = append(out, h.Messages)
	}
	return out
}

// TestStatsStepOrderExtremes: the steps are listed in order even when they
// lie far apart (a difference that overflows int64 sorted them wrongly).
func TestStatsStepOrderExtremes(t *testing.T) {
	var b StatsBuilder
	for i, step := range []int64{math.MaxInt64, math.MinInt64 + 1, 0, -5, 7} {
		b.Add(Group{ID: string(rune('a' + i)), Trajectories: []Trajectory{{ID: "t", GroupID: string(rune('a' + i)), Step: step}}})
	}
	var got []int64
	for _, s := range b.Stats().ByStep {
		got = append(got, s.Step)
	}
	want := []int64{math.MinInt64 + 1, -5, 0, 7, math.MaxInt64}
	if len(got) != len(want) {
		t.Fatalf("steps %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("steps %v, want %v", got, want)
		}
	}
}

// TestStatsNonFiniteRewards: a NaN reward counts as unscored, as hone-train
// takes it, rather than turning every figure NaN; an infinite one is
// averaged, and the figures it makes infinite or NaN survive JSON as
// strings, where encoding/json refused the whole summary.
func TestStatsNonFiniteRewards(t *testing.T) {
	var b StatsBuilder
	b.Add(Group{ID: "g", Trajectories: []Trajectory{
		{ID: "a", GroupID: "g", Reward: Float64(1)},
		{ID: "b", GroupID: "g", Reward: Float64(math.NaN())},
		{ID: "c", GroupID: "g", Reward: Float64(3)},
	}})
	s := b.Stats()
	if r := s.Reward; r.Scored != 2 || r.Unscored != 1 || r.Mean != 2 || r.Min != 1 || r.Max != 3 {
		t.Errorf("with a NaN reward: %+v, want 2 scored (mean 2, min 1, max 3) and 1 unscored", r)
	}
	b.Add(Group{ID: "h", Trajectories: []Trajectory{
		{ID: "d", GroupID: "h", Step: 1, Reward: Float64(math.Inf(1))},
		{ID: "e", GroupID: "h", Step: 1, Reward: Float64(math.Inf(-1))},
	}})
	s = b.Stats()
	out, err := json.Marshal(s)
	if err != nil {
		t.Fatalf("stats with infinite rewards: %v", err)
	}
	var back Stats
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatalf("reading back %s: %v", out, err)
	}
	r := back.ByStep[1].Reward
	if !math.IsNaN(r.Mean) || !math.IsInf(r.Min, -1) || !math.IsInf(r.Max, 1) || r.Scored != 2 {
		t.Errorf("step 1 read back as %+v from %s; want mean NaN, min -Inf, max +Inf", r, out)
	}
	if !strings.Contains(string(out), `"min":"-Inf","max":"+Inf"`) {
		t.Errorf("JSON %s does not spell the infinite figures as strings", out)
	}
}

package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// stats averages an infinite reward as its help says: a mean beside one
// -Inf is -Inf (Welford's update turned it NaN at the next finite reward),
// and rewards near the float64 limit average to what they are (the update
// x - mean overflowed: 1e308 and -1e308 averaged to -Inf).
func TestStatsInfiniteAndHugeRewards(t *testing.T) {
	var jsonl strings.Builder
	for i, r := range []string{`0.5`, `"-Inf"`, `1`, `2`, `1e308`, `-1e308`, `1e308`, `-1e308`} {
		g, step := "inf", 1
		if i >= 4 {
			g, step = "huge", 2
		}
		b, _ := json.Marshal(map[string]any{"trajectory_id": string(rune('a' + i)), "group_id": g, "step": step,
			"reward": json.RawMessage(r), "messages": []map[string]string{{"role": "user", "content": "hi"}}})
		jsonl.Write(append(b, '\n'))
	}
	s := statsOfJSONL(t, jsonl.String())
	if len(s.ByStep) != 2 {
		t.Fatalf("steps %+v", s.ByStep)
	}
	if r := s.ByStep[0].Reward; !math.IsInf(r.Mean, -1) || !math.IsInf(r.Min, -1) || r.Max != 2 {
		t.Errorf("rewards 0.5, -Inf, 1, 2: %+v, want mean -Inf", r)
	}
	if r := s.ByStep[1].Reward; math.Abs(r.Mean) > 1e300 || r.Min != -1e308 || r.Max != 1e308 {
		t.Errorf("rewards ±1e308: %+v, want mean 0", r)
	}
	if r := s.Reward; !math.IsInf(r.Mean, -1) || r.Scored != 8 {
		t.Errorf("total %+v, want mean -Inf over 8", r)
	}
}

// stats gives the standard deviation of rewards at either end of the
// float64 range: the squared deviations of ±1e308 overflowed to +Inf and
// those of 1e-300 and 3e-300 underflowed to 0, where the deviations
// themselves are ordinary numbers.
func TestStatsStdAtFloatLimits(t *testing.T) {
	var jsonl strings.Builder
	for i, r := range []float64{1e308, -1e308, 1e308, -1e308, 1e-300, 3e-300} {
		step := 1
		if i >= 4 {
			step = 2
		}
		b, _ := json.Marshal(map[string]any{"trajectory_id": string(rune('a' + i)), "group_id": "g" + string(rune('0'+step)), "step": step,
			"reward": r, "messages": []map[string]string{{"role": "user", "content": "hi"}}})
		jsonl.Write(append(b, '\n'))
	}
	s := statsOfJSONL(t, jsonl.String())
	if len(s.ByStep) != 2 {
		t.Fatalf("steps %+v", s.ByStep)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) <= 1e-9*math.Abs(want) }
	if r := s.ByStep[0].Reward; !near(r.Std, 1e308*(2/math.Sqrt(3))) || math.Abs(r.Mean) > 1e300 {
		t.Errorf("rewards ±1e308: %+v, want std %g", r, 1e308*(2/math.Sqrt(3)))
	}
	if r := s.ByStep[1].Reward; !near(r.Std, math.Sqrt2*1e-300) || !near(r.Mean, 2e-300) {
		t.Errorf("rewards 1e-300, 3e-300: %+v, want mean 2e-300, std %g", r, math.Sqrt2*1e-300)
	}
}

// statsOfJSONL is `hone-inspect stats --json` of the JSON Lines chats
// imported by `hone-inspect from-jsonl`, both run as processes.
func statsOfJSONL(t *testing.T, jsonl string) trajectory.Stats {
	t.Helper()
	pq := mustRun(t, []byte(jsonl), "from-jsonl", "-").stdout
	out := mustRun(t, []byte(pq), "stats", "--json", "-").stdout
	var s trajectory.Stats
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("stats --json: %v\n%s", err, out)
	}
	return s
}

package game2048_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/collect/env/envtest"
	"github.com/hone-rl/hone/collect/env/game2048"
	"github.com/hone-rl/hone/format/trajectory"
)

// The environment keeps its contract with ART's reward shape (rewards in
// the widened range among them).
func TestARTSuite(t *testing.T) {
	e := game2048.New(64, 200)
	e.Reward = game2048.RewardART
	envtest.Suite(t, e, envtest.SuiteOptions{Scenarios: 4, MaxTurns: 200})
}

// ARTReward on known boards equals ART's formula as restated in Python by
// testdata/art_reward.py (which wrote testdata/art_reward.json).
func TestARTRewardGolden(t *testing.T) {
	b, err := os.ReadFile("testdata/art_reward.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Board  [16]int
		Target int
		Reward float64
	}
	if err := json.Unmarshal(b, &cases); err != nil || len(cases) < 8 {
		t.Fatalf("%d cases: %v", len(cases), err)
	}
	for _, c := range cases {
		if got := game2048.ARTReward(c.Board, c.Target); math.Abs(got-c.Reward) > 1e-12 {
			t.Errorf("board %v target %d: %v, want %v (rerun testdata/art_reward.py if ART's formula changed)", c.Board, c.Target, got, c.Reward)
		}
	}
}

// With Reward "art" a played game ends with ART's reward on its final
// board (read back from the max_tile and board_value metrics): 2 once the
// target appears, below 1 otherwise, and −1 for an unreadable move.
func TestARTRewardEpisodes(t *testing.T) {
	for _, target := range []int{8, 256} {
		e := game2048.New(target, 300)
		e.Reward = game2048.RewardART
		scs, _ := e.Scenarios(context.Background(), 3, 4)
		for i, sc := range scs {
			ep, err := e.NewEpisode(context.Background(), sc, int64(i))
			if err != nil {
				t.Fatal(err)
			}
			p, _ := e.Policy("greedy", int64(i))
			res, err := env.Play(context.Background(), ep, p, 300)
			if err != nil {
				t.Fatal(err)
			}
			m, r := res.Outcome.Metrics, res.Outcome.Reward
			mt, s := m["max_tile"], m["board_value"]
			want := 2.0
			if mt < float64(target) {
				lt := math.Log2(float64(target))
				want = (math.Log2(mt)-1)/(lt-1) + 0.2*(math.Log2(s)-1)/(math.Log2(16*float64(target))-1)
			}
			if math.Abs(r-want) > 1e-12 || (target == 8 && r != 2) {
				t.Errorf("target %d game %d: reward %v, want %v (metrics %v)", target, i, r, want, m)
			}
		}
	}
	e := game2048.New(64, 10)
	e.Reward = game2048.RewardART
	ep, _ := e.NewEpisode(context.Background(), env.Scenario{ID: "s", Payload: []byte(`{"seed":1}`)}, 0)
	res, err := env.Play(context.Background(), ep, env.PolicyFunc(func(context.Context, []trajectory.Message, []trajectory.Tool) (trajectory.Message, error) {
		return env.Assistant("<move>left</move>"), nil
	}), 10)
	if err != nil || res.Outcome.Reward != -1 {
		t.Errorf("unreadable move: %v, reward %v", err, res.Outcome.Reward)
	}
	e.Reward = "ruler"
	if _, err := e.NewEpisode(context.Background(), env.Scenario{ID: "s"}, 0); err == nil {
		t.Error("an unknown reward shape was accepted")
	}
}

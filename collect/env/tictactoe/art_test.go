package tictactoe_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/collect/env/envtest"
	"github.com/hone-rl/hone/collect/env/tictactoe"
	"github.com/hone-rl/hone/format/trajectory"
)

// The environment keeps its contract with ART's reward shape (rewards in
// the widened range among them).
func TestARTSuite(t *testing.T) {
	e, _ := tictactoe.New("random")
	e.Reward = tictactoe.RewardART
	envtest.Suite(t, e, envtest.SuiteOptions{Scenarios: 6, MaxTurns: 5})
}

// ARTReward per result equals ART's formula as restated in Python by
// testdata/art_reward.py (which wrote testdata/art_reward.json).
func TestARTRewardGolden(t *testing.T) {
	b, err := os.ReadFile("testdata/art_reward.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Result string
		Moves  int
		Reward float64
	}
	if err := json.Unmarshal(b, &cases); err != nil || len(cases) < 10 {
		t.Fatalf("%d cases: %v", len(cases), err)
	}
	for _, c := range cases {
		if got := tictactoe.ARTReward(c.Result, c.Moves); math.Abs(got-c.Reward) > 1e-12 {
			t.Errorf("%q after %d moves: %v, want %v (rerun testdata/art_reward.py if ART's formula changed)", c.Result, c.Moves, got, c.Reward)
		}
	}
}

// play runs one game of the art-shaped environment, the agent first.
func playART(t *testing.T, opponent string, p env.Policy, seed int64) env.Outcome {
	t.Helper()
	e, _ := tictactoe.New(opponent)
	e.Reward = tictactoe.RewardART
	ep, err := e.NewEpisode(context.Background(), env.Scenario{ID: "s", Payload: []byte(`{"agent_first":true}`)}, seed)
	if err != nil {
		t.Fatal(err)
	}
	res, err := env.Play(context.Background(), ep, p, 9)
	if err != nil {
		t.Fatal(err)
	}
	return res.Outcome
}

// Known games under Reward "art": two legal moves then an occupied cell
// costs −100 + ln 3/ln 100; perfect play against perfect play draws (0.5);
// perfect play against a random opponent wins (1) or draws.
func TestARTRewardEpisodes(t *testing.T) {
	for seed := range int64(5) {
		// Cell 1, the first free cell, then cell 1 again: nobody has a
		// line after two moves each.
		i := 0
		o := playART(t, "random", env.PolicyFunc(func(_ context.Context, msgs []trajectory.Message, _ []trajectory.Tool) (trajectory.Message, error) {
			i++
			if i != 2 {
				return env.Assistant("1"), nil
			}
			cells := strings.ReplaceAll(msgs[len(msgs)-1].Content, "\n", "")
			return env.Assistant(strconv.Itoa(strings.IndexAny(cells, "123456789") + 1)), nil
		}), seed)
		want := -100 + math.Log(3)/math.Log(100)
		if o.Metrics["illegal"] != 1 || o.Metrics["moves"] != 2 || math.Abs(o.Reward-want) > 1e-12 {
			t.Errorf("seed %d: illegal third move: reward %v, want %v (metrics %v)", seed, o.Reward, want, o.Metrics)
		}
	}
	e, _ := tictactoe.New("minimax")
	for seed := range int64(4) {
		p, _ := e.Policy("minimax", seed)
		if o := playART(t, "minimax", p, seed); o.Metrics["draw"] != 1 || o.Reward != 0.5 {
			t.Errorf("seed %d: minimax against minimax: reward %v, metrics %v", seed, o.Reward, o.Metrics)
		}
		o := playART(t, "random", p, seed)
		if want := o.Metrics["win"] + 0.5*o.Metrics["draw"]; o.Metrics["loss"] != 0 || o.Reward != want {
			t.Errorf("seed %d: minimax against random: reward %v, want %v, metrics %v", seed, o.Reward, want, o.Metrics)
		}
	}
}

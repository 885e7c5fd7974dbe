package tictactoe_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/collect/env/envtest"
	"github.com/hone-rl/hone/collect/env/tictactoe"
	"github.com/hone-rl/hone/format/trajectory"
)

func TestSuite(t *testing.T) {
	for _, opp := range []string{"random", "minimax"} {
		t.Run(opp, func(t *testing.T) {
			e, err := tictactoe.New(opp)
			if err != nil {
				t.Fatal(err)
			}
			envtest.Suite(t, e, envtest.SuiteOptions{Scenarios: 6, MaxTurns: 5})
		})
	}
}

// play runs n games of policy against opponent and sums the metrics.
func play(t *testing.T, policy, opponent string, n int) map[string]float64 {
	e, _ := tictactoe.New(opponent)
	sum := map[string]float64{}
	for i := range n {
		p, _ := json.Marshal(tictactoe.Payload{Opponent: opponent, AgentFirst: i%2 == 0})
		ep, err := e.NewEpisode(context.Background(), env.Scenario{ID: "s", Payload: p}, int64(i))
		if err != nil {
			t.Fatal(err)
		}
		pol, _ := e.Policy(policy, int64(i))
		res, err := env.Play(context.Background(), ep, pol, 9)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range res.Outcome.Metrics {
			sum[k] += v
		}
	}
	return sum
}

func TestStrength(t *testing.T) {
	if m := play(t, "minimax", "minimax", 40); m["draw"] != 40 {
		t.Errorf("minimax vs minimax: %v, want 40 draws", m)
	}
	if m := play(t, "random", "minimax", 60); m["win"] != 0 || m["loss"] < 20 {
		t.Errorf("random vs minimax: %v, want no wins and many losses", m)
	}
	if m := play(t, "minimax", "random", 60); m["loss"] != 0 || m["win"] < 40 {
		t.Errorf("minimax vs random: %v, want no losses, mostly wins", m)
	}
}

func TestIllegalMove(t *testing.T) {
	e, _ := tictactoe.New("random")
	ep, _ := e.NewEpisode(context.Background(), env.Scenario{ID: "s", Payload: []byte(`{"agent_first":true}`)}, 1)
	obs, _ := ep.Reset(context.Background())
	if obs.Messages[0].Content != "...\n...\n...\nyour move (x, 1-9)" {
		t.Errorf("opening %q", obs.Messages[0].Content)
	}
	moves := []string{"5", "5"}
	i := 0
	res, err := env.Play(context.Background(), ep, env.PolicyFunc(func(context.Context, []trajectory.Message, []trajectory.Tool) (trajectory.Message, error) {
		i++
		return env.Assistant(moves[i-1]), nil
	}), 9)
	if err != nil || res.Outcome.Reward != -1 || res.Outcome.Metrics["illegal"] != 1 || res.Outcome.Metrics["moves"] != 1 {
		t.Errorf("occupied cell: %v %+v", err, res.Outcome)
	}
}

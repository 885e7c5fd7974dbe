package game2048_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/collect/env/envtest"
	"github.com/hone-rl/hone/collect/env/game2048"
	"github.com/hone-rl/hone/format/trajectory"
)

func TestSuite(t *testing.T) {
	envtest.Suite(t, game2048.New(64, 200), envtest.SuiteOptions{Scenarios: 4, MaxTurns: 200})
}

func TestGreedyBeatsRandom(t *testing.T) {
	e := game2048.New(128, 300)
	scs, _ := e.Scenarios(context.Background(), 2, 20)
	mean := func(name string) float64 {
		s := 0.0
		for i, sc := range scs {
			ep, _ := e.NewEpisode(context.Background(), sc, int64(i))
			p, _ := e.Policy(name, int64(i))
			res, err := env.Play(context.Background(), ep, p, 300)
			if err != nil {
				t.Fatal(err)
			}
			s += res.Outcome.Metrics["max_tile"]
		}
		return s / float64(len(scs))
	}
	g, r := mean("greedy"), mean("random")
	if g <= r {
		t.Errorf("mean max tile: greedy %v, random %v", g, r)
	}
	t.Logf("mean max tile: greedy %v, random %v", g, r)
}

// Repeated "left" sometimes meets a packed board where the move changes
// nothing: each such turn is counted and announced, and never a move.
func TestMovesAndIllegal(t *testing.T) {
	e := game2048.New(64, 10)
	sawIllegal := false
	for seed := range 40 {
		ep, _ := e.NewEpisode(context.Background(), env.Scenario{ID: "s", Payload: []byte(fmt.Sprintf(`{"seed":%d}`, seed))}, 0)
		replies := []string{"left", "left", "LEFT", "left", "left", "left", "left", "sideways"}
		i := 0
		res, err := env.Play(context.Background(), ep, env.PolicyFunc(func(context.Context, []trajectory.Message, []trajectory.Tool) (trajectory.Message, error) {
			i++
			return env.Assistant(replies[i-1]), nil
		}), 10)
		if err != nil {
			t.Fatal(err)
		}
		m := res.Outcome.Metrics
		announced := 0.0
		for _, msg := range res.Messages {
			if msg.Role == "user" && strings.HasPrefix(msg.Content, "illegal move\n") {
				announced++
			}
		}
		if m["moves"]+m["illegal"] != 7 || announced != m["illegal"] || m["invalid"] != 1 || res.Outcome.Reward != -1 {
			t.Errorf("seed %d: metrics %v reward %v, %v announced", seed, m, res.Outcome.Reward, announced)
		}
		sawIllegal = sawIllegal || m["illegal"] > 0
	}
	if !sawIllegal {
		t.Error("no seed produced an illegal move")
	}
}

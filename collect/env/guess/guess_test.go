package guess_test

import (
	"context"
	"testing"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/collect/env/envtest"
	"github.com/hone-rl/hone/collect/env/guess"
	"github.com/hone-rl/hone/format/trajectory"
)

func TestSuite(t *testing.T) { envtest.Suite(t, guess.New(32, 5), envtest.SuiteOptions{Scenarios: 8}) }

// replay plays fixed replies against secret 20 in 1..32, 5 turns.
func replay(t *testing.T, replies ...string) env.PlayResult {
	t.Helper()
	e := guess.New(32, 5)
	ep, err := e.NewEpisode(context.Background(), env.Scenario{ID: "s", Payload: []byte(`{"secret":20}`)}, 0)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	res, err := env.Play(context.Background(), ep, env.PolicyFunc(func(context.Context, []trajectory.Message, []trajectory.Tool) (trajectory.Message, error) {
		i++
		return env.Assistant(replies[i-1]), nil
	}), 0)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestTranscriptAndReward(t *testing.T) {
	res := replay(t, "16", "40", "24", "20")
	want := []string{"range 1-32", "16", "higher, range 17-32", "40", "out of range, range 17-32", "24", "lower, range 17-23", "20"}
	if len(res.Messages) != len(want) {
		t.Fatalf("got %d messages, want %d: %+v", len(res.Messages), len(want), res.Messages)
	}
	for i, m := range res.Messages {
		if m.Content != want[i] {
			t.Errorf("message %d = %q, want %q", i, m.Content, want[i])
		}
	}
	if r := res.Outcome.Reward; r != 1+0.2*1/5 {
		t.Errorf("reward %v, want %v", r, 1+0.2*1/5.0)
	}
	if m := res.Outcome.Metrics; m["out_of_range"] != 1 || m["found"] != 1 || m["turns"] != 4 {
		t.Errorf("metrics %v", m)
	}
}

func TestNotFoundAndInvalid(t *testing.T) {
	res := replay(t, "1", "2", "3", "4", "5")
	if res.Outcome.Reward != 0 || !res.Done || res.Outcome.Metrics["found"] != 0 {
		t.Errorf("five misses: reward %v done %v", res.Outcome.Reward, res.Done)
	}
	res = replay(t, "16", "seventeen")
	if res.Outcome.Reward != -1 || res.Outcome.Metrics["invalid"] != 1 || len(res.Messages) != 4 {
		t.Errorf("unparsable: reward %v metrics %v", res.Outcome.Reward, res.Outcome.Metrics)
	}
}

// Bisection must beat random-in-range clearly, as the demo relies on.
func TestPoliciesSeparate(t *testing.T) {
	e := guess.New(32, 5)
	scs, _ := e.Scenarios(context.Background(), 1, 400)
	rate := func(name string) float64 {
		found := 0.0
		for i, sc := range scs {
			ep, _ := e.NewEpisode(context.Background(), sc, int64(i))
			p, _ := e.Policy(name, int64(i))
			res, err := env.Play(context.Background(), ep, p, 0)
			if err != nil {
				t.Fatal(err)
			}
			found += res.Outcome.Metrics["found"]
		}
		return found / float64(len(scs))
	}
	b, r := rate("bisect"), rate("random-in-range")
	if b < 0.9 || r > 0.7 || r < 0.3 {
		t.Errorf("found rate bisect %.3f, random-in-range %.3f", b, r)
	}
	t.Logf("found rate bisect %.3f, random-in-range %.3f", b, r)
}

package envtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"testing"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/format/trajectory"
)

// SuiteOptions tunes Suite for one environment.
type SuiteOptions struct {
	Scenarios int // scenarios to play per policy (default 4)
	MaxTurns  int // turn limit for each episode (default 50)
}

// Suite checks the contract of env.Env on e.
func Suite(t *testing.T, e env.Env, o SuiteOptions) {
	t.Helper()
	if o.Scenarios <= 0 {
		o.Scenarios = 4
	}
	if o.MaxTurns <= 0 {
		o.MaxTurns = 50
	}
	ctx := context.Background()
	lo, hi := e.RewardRange()
	if !(lo <= hi) {
		t.Fatalf("RewardRange = [%v, %v]", lo, hi)
	}
	scs, err := e.Scenarios(ctx, 7, o.Scenarios)
	if err != nil {
		t.Fatalf("Scenarios: %v", err)
	}
	t.Run("scenarios", func(t *testing.T) {
		if len(scs) != o.Scenarios {
			t.Fatalf("got %d scenarios, want %d", len(scs), o.Scenarios)
		}
		again, err := e.Scenarios(ctx, 7, o.Scenarios)
		if err != nil || !reflect.DeepEqual(again, scs) {
			t.Fatalf("Scenarios(7) differs on a second call (err %v)", err)
		}
		ids := map[string]bool{}
		for _, sc := range scs {
			if sc.ID == "" || ids[sc.ID] {
				t.Errorf("scenario id %q empty or repeated", sc.ID)
			}
			ids[sc.ID] = true
			if len(sc.Payload) > 0 && !json.Valid(sc.Payload) {
				t.Errorf("scenario %s: payload is not JSON", sc.ID)
			}
		}
	})
	check := func(t *testing.T, res env.PlayResult, sc env.Scenario) {
		t.Helper()
		r := res.Outcome.Reward
		if math.IsNaN(r) || r < lo || r > hi {
			t.Errorf("scenario %s: reward %v outside [%v, %v]", sc.ID, r, lo, hi)
		}
		for k, v := range res.Outcome.Metrics {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Errorf("scenario %s: metric %s = %v", sc.ID, k, v)
			}
		}
		tr := trajectory.Trajectory{ID: "t", GroupID: "g", Messages: res.Messages, Tools: res.Tools}
		if err := tr.Validate(); err != nil {
			t.Errorf("scenario %s: recorded trajectory invalid: %v", sc.ID, err)
		}
	}
	if s, ok := e.(env.Scripted); ok {
		if len(s.Policies()) == 0 {
			t.Fatal("Scripted with no policies")
		}
		for _, name := range s.Policies() {
			t.Run("policy="+name, func(t *testing.T) {
				pol := func(seed int64) env.Policy {
					p, err := s.Policy(name, seed)
					if err != nil {
						t.Fatalf("Policy(%q): %v", name, err)
					}
					return p
				}
				for i, sc := range scs {
					res := play(t, e, sc, int64(i), o.MaxTurns, pol)
					check(t, res, sc)
					if !res.Done {
						t.Errorf("scenario %s: policy %s did not finish in %d turns", sc.ID, name, o.MaxTurns)
					}
					// Env's contract: an episode is reproducible from
					// (scenario, seed, the policy's turns), and a
					// scripted policy from its seed.
					if again := play(t, e, sc, int64(i), o.MaxTurns, pol); !reflect.DeepEqual(again, res) {
						t.Errorf("scenario %s, seed %d: a second play differs:\n%s", sc.ID, i, firstDiff(res, again))
					}
				}
			})
		}
		if _, err := s.Policy("no-such-policy", 1); err == nil {
			t.Error("Policy(no-such-policy) did not fail")
		}
	}
	t.Run("garbage", func(t *testing.T) {
		n := 0
		for i, sc := range scs {
			res := play(t, e, sc, int64(i), 6, func(int64) env.Policy {
				return env.PolicyFunc(func(_ context.Context, _ []trajectory.Message, tools []trajectory.Tool) (trajectory.Message, error) {
					n++
					m := env.Assistant(fmt.Sprintf("?? %d garbage {", n))
					if n%2 == 0 {
						m.ToolCalls = []trajectory.ToolCall{{ID: fmt.Sprint("c", n), Type: "function", Name: "no_such_tool", Arguments: "{bad"}}
					}
					return m, nil
				})
			})
			check(t, res, sc)
		}
	})
}

func play(t *testing.T, e env.Env, sc env.Scenario, seed int64, maxTurns int, pol func(int64) env.Policy) env.PlayResult {
	t.Helper()
	ctx := context.Background()
	ep, err := e.NewEpisode(ctx, sc, seed)
	if err != nil {
		t.Fatalf("NewEpisode(%s): %v", sc.ID, err)
	}
	defer func() {
		if err := ep.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	p := pol(seed)
	if c, ok := p.(io.Closer); ok {
		defer c.Close()
	}
	res, err := env.Play(ctx, &answering{Episode: ep, t: t, sc: sc.ID}, p, maxTurns)
	if err != nil {
		t.Fatalf("scenario %s: %v", sc.ID, err)
	}
	return res
}

// answering checks Step's contract on each turn: an episode that goes on
// answers every well-formed call with a tool message of its id (Play
// would fill in a placeholder for a missing one, and the episode pass).
type answering struct {
	env.Episode
	t  *testing.T
	sc string
}

func (a *answering) Step(ctx context.Context, turn env.Turn) (env.Feedback, error) {
	fb, err := a.Episode.Step(ctx, turn)
	if err != nil || fb.Done {
		return fb, err
	}
	results := map[string]int{}
	for _, m := range fb.Messages {
		if m.Role == "tool" {
			results[m.ToolCallID]++
		}
	}
	for _, c := range turn.Calls {
		if results[c.ID]--; results[c.ID] < 0 {
			a.t.Errorf("scenario %s: the episode went on without a result for call %q (%s)", a.sc, c.ID, c.Name)
		}
	}
	return fb, err
}

// firstDiff names the first message, or the outcome, in which two plays
// differ.
func firstDiff(a, b env.PlayResult) string {
	for i := range min(len(a.Messages), len(b.Messages)) {
		if !reflect.DeepEqual(a.Messages[i], b.Messages[i]) {
			return fmt.Sprintf("message %d: %+v\nthen:   %+v", i, a.Messages[i], b.Messages[i])
		}
	}
	if len(a.Messages) != len(b.Messages) {
		return fmt.Sprintf("%d messages, then %d", len(a.Messages), len(b.Messages))
	}
	return fmt.Sprintf("outcome %+v (done %v)\nthen:   %+v (done %v)", a.Outcome, a.Done, b.Outcome, b.Done)
}

package env_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/format/trajectory"
)

// echoEpisode answers each call with a result naming its arguments, in
// call order, and is done at the first turn without calls.
type echoEpisode struct{}

func (echoEpisode) Reset(context.Context) (env.Observation, error) {
	return env.Observation{Messages: []trajectory.Message{{Role: "user", Content: "go"}},
		Tools: []trajectory.Tool{{Type: "function", Name: "echo", Parameters: `{"type":"object","properties":{"s":{"type":"string"}}}`}}}, nil
}

func (echoEpisode) Step(_ context.Context, turn env.Turn) (env.Feedback, error) {
	var fb env.Feedback
	for _, c := range turn.Calls {
		fb.Messages = append(fb.Messages, env.ToolResult(c.ID, c.Name, "result of "+c.Arguments))
	}
	fb.Done = len(turn.Calls) == 0
	return fb, nil
}

func (echoEpisode) Outcome() env.Outcome { return env.Outcome{} }
func (echoEpisode) Close() error         { return nil }

// TestPlaySharedCallIDs: a turn whose calls share an id, or have none (as
// some servers give them), gets each call's own result, in order, as it
// does with distinct ids; none is lost or answered with another's.
func TestPlaySharedCallIDs(t *testing.T) {
	for name, ids := range map[string][3]string{"distinct": {"a", "b", "c"}, "shared": {"x", "x", "x"}, "empty": {"", "", ""}, "mixed": {"x", "", "x"}} {
		t.Run(name, func(t *testing.T) {
			turn := 0
			p := env.PolicyFunc(func(context.Context, []trajectory.Message, []trajectory.Tool) (trajectory.Message, error) {
				turn++
				if turn > 1 {
					return trajectory.Message{Content: "done"}, nil
				}
				var calls []trajectory.ToolCall
				for i, id := range ids {
					calls = append(calls, trajectory.ToolCall{ID: id, Name: "echo", Arguments: `{"s":"` + string(rune('1'+i)) + `"}`})
				}
				return trajectory.Message{ToolCalls: calls}, nil
			})
			res, err := env.Play(context.Background(), echoEpisode{}, p, 0)
			if err != nil {
				t.Fatal(err)
			}
			// user, assistant with 3 calls, 3 results, assistant "done".
			if len(res.Messages) != 6 {
				t.Fatalf("%d messages: %+v", len(res.Messages), res.Messages)
			}
			for i, id := range ids {
				m := res.Messages[2+i]
				want := `result of {"s":"` + string(rune('1'+i)) + `"}`
				if m.Role != "tool" || m.ToolCallID != id || m.Content != want {
					t.Errorf("result %d: %+v, want %q for call id %q", i, m, want, id)
				}
			}
		})
	}
}

// TestPlayTruncated: truncated is 1 when maxTurns ended an episode that was
// not done, and 0 when it ended done or with an error (which was 1: an
// error is the row's error, not a turn limit).
func TestPlayTruncated(t *testing.T) {
	call := trajectory.Message{ToolCalls: []trajectory.ToolCall{{ID: "a", Name: "echo", Arguments: `{"s":"x"}`}}}
	busy := env.PolicyFunc(func(context.Context, []trajectory.Message, []trajectory.Tool) (trajectory.Message, error) {
		return call, nil
	})
	res, err := env.Play(context.Background(), echoEpisode{}, busy, 2)
	if err != nil || res.Outcome.Metrics["truncated"] != 1 || res.Done {
		t.Errorf("stopped by maxTurns: truncated %v, done %v, %v; want 1", res.Outcome.Metrics["truncated"], res.Done, err)
	}
	turn := 0
	failing := env.PolicyFunc(func(context.Context, []trajectory.Message, []trajectory.Tool) (trajectory.Message, error) {
		if turn++; turn > 1 {
			return trajectory.Message{}, errors.New("model down")
		}
		return call, nil
	})
	res, err = env.Play(context.Background(), echoEpisode{}, failing, 5)
	if err == nil || res.Outcome.Metrics["truncated"] != 0 {
		t.Errorf("failed at turn 2: truncated %v, %v; want 0 and the error", res.Outcome.Metrics["truncated"], err)
	}
}

package envtest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/format/trajectory"
)

// Fake is a small tool-using environment: the agent must say a secret word,
// which the tool "lookup" reveals. Reward 1 for the word (0.5 when said
// only after a wrong guess), 0 otherwise. Turns that are neither a tool call
// nor the word get "wrong" and the episode ends after 3 wrong answers.
type Fake struct{}

// FakePayload is a Fake scenario's payload.
type FakePayload struct {
	Word string `json:"word"`
}

var lookupTool = trajectory.Tool{
	Type: "function", Name: "lookup", Description: "reveal the secret word",
	Parameters: `{"type":"object","properties":{"key":{"type":"string"}},"required":["key"]}`,
}

// Name implements env.Env.
func (Fake) Name() string { return "fake" }

// RewardRange implements env.Env.
func (Fake) RewardRange() (float64, float64) { return 0, 1 }

// Scenarios implements env.Env.
func (Fake) Scenarios(_ context.Context, seed int64, n int) ([]env.Scenario, error) {
	words := []string{"apple", "birch", "cedar", "delta", "ember"}
	out := make([]env.Scenario, n)
	for i := range out {
		p, _ := json.Marshal(FakePayload{Word: words[(int(seed)+i)%len(words)]})
		out[i] = env.Scenario{ID: fmt.Sprintf("fake-%d-%d", seed, i), Env: "fake", Payload: p}
	}
	return out, nil
}

// NewEpisode implements env.Env.
func (Fake) NewEpisode(_ context.Context, sc env.Scenario, _ int64) (env.Episode, error) {
	var p FakePayload
	if err := json.Unmarshal(sc.Payload, &p); err != nil || p.Word == "" {
		return nil, fmt.Errorf("fake: scenario %s: payload needs a word", sc.ID)
	}
	return &fakeEpisode{word: p.Word}, nil
}

type fakeEpisode struct {
	word          string
	wrong, lookup int
	won           bool
}

func (f *fakeEpisode) Reset(context.Context) (env.Observation, error) {
	return env.Observation{
		Messages: []trajectory.Message{{Role: "system", Content: "Say the secret word."}, env.User("what is the word?")},
		Tools:    []trajectory.Tool{lookupTool},
	}, nil
}

func (f *fakeEpisode) Step(_ context.Context, t env.Turn) (env.Feedback, error) {
	if len(t.Message.ToolCalls) > 0 {
		var out []trajectory.Message
		for _, c := range t.Calls {
			f.lookup++
			out = append(out, env.ToolResult(c.ID, c.Name, f.word))
		}
		return env.Feedback{Messages: out}, nil
	}
	if strings.TrimSpace(t.Message.Content) == f.word {
		f.won = true
		return env.Feedback{Done: true}, nil
	}
	f.wrong++
	return env.Feedback{Messages: []trajectory.Message{env.User("wrong")}, Done: f.wrong >= 3}, nil
}

func (f *fakeEpisode) Outcome() env.Outcome {
	r := 0.0
	if f.won {
		r = 1
		if f.wrong > 0 {
			r = 0.5
		}
	}
	won := 0.0
	if f.won {
		won = 1
	}
	return env.Outcome{Reward: r, Metrics: map[string]float64{"won": won, "wrong": float64(f.wrong), "lookups": float64(f.lookup)}}
}

func (f *fakeEpisode) Close() error { return nil }

// Policies implements env.Scripted: "lookup" calls the tool then answers;
// "guess" answers "apple" without looking.
func (Fake) Policies() []string { return []string{"lookup", "guess"} }

// Policy implements env.Scripted.
func (Fake) Policy(name string, _ int64) (env.Policy, error) {
	switch name {
	case "lookup":
		return env.PolicyFunc(func(_ context.Context, msgs []trajectory.Message, _ []trajectory.Tool) (trajectory.Message, error) {
			last := msgs[len(msgs)-1]
			if last.Role == "tool" {
				return env.Assistant(last.Content), nil
			}
			return trajectory.Message{Role: "assistant", ToolCalls: []trajectory.ToolCall{{ID: "call_1", Type: "function", Name: "lookup", Arguments: `{"key":"word"}`}}}, nil
		}), nil
	case "guess":
		return env.PolicyFunc(func(context.Context, []trajectory.Message, []trajectory.Tool) (trajectory.Message, error) {
			return env.Assistant("apple"), nil
		}), nil
	}
	return nil, fmt.Errorf("fake: %w %q", env.ErrUnknownPolicy, name)
}

package env

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/hone-rl/hone/format/trajectory"
)

// Scenario is one task: a group is G attempts at one scenario.
type Scenario struct {
	ID      string          `json:"id"`
	Env     string          `json:"environment,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
	Split   string          `json:"split,omitempty"`
}

// Env makes scenarios and episodes. Implementations are safe for concurrent
// use: episodes of one Env run in parallel.
type Env interface {
	// Name is the environment name recorded in every trajectory.
	Name() string
	// Scenarios generates n scenarios, the same ones for the same seed.
	Scenarios(ctx context.Context, seed int64, n int) ([]Scenario, error)
	// NewEpisode starts one attempt at sc. seed drives any randomness of
	// the environment (an opponent, tile spawns), so an episode is
	// reproducible from (scenario, seed, the policy's turns).
	NewEpisode(ctx context.Context, sc Scenario, seed int64) (Episode, error)
	// RewardRange bounds the reward of a finished episode.
	RewardRange() (lo, hi float64)
}

// Episode is one attempt. Its methods are called from one goroutine.
type Episode interface {
	// Reset returns the opening messages and the tools offered.
	Reset(ctx context.Context) (Observation, error)
	// Step answers one assistant turn. turn.Calls holds only the tool
	// calls the loop found well formed (known tool, valid JSON arguments
	// that fit the schema); the episode returns one role "tool" message
	// per call, with its ToolCallID, plus any user message to append.
	Step(ctx context.Context, turn Turn) (Feedback, error)
	// Outcome is the reward and metrics so far; the loop reads it once
	// the episode is done or a limit stopped it.
	Outcome() Outcome
	// Close releases what the episode holds (a subprocess, a session).
	Close() error
}

// Observation is what an episode opens with.
type Observation struct {
	Messages []trajectory.Message
	Tools    []trajectory.Tool
}

// Turn is one assistant turn as the policy produced it.
type Turn struct {
	Message trajectory.Message
	Calls   []trajectory.ToolCall // well-formed tool calls, in order
}

// Feedback is the episode's answer to a turn.
type Feedback struct {
	Messages []trajectory.Message // tool results and/or a user message
	Done     bool
}

// Outcome is an episode's reward and metrics.
type Outcome struct {
	Reward  float64
	Metrics map[string]float64
}

// Policy produces the next assistant turn from the conversation so far.
// Scripted policies read the same messages a model would see and answer in
// the same format, so their trajectories serve as SFT data.
type Policy interface {
	Act(ctx context.Context, msgs []trajectory.Message, tools []trajectory.Tool) (trajectory.Message, error)
}

// PolicyFunc adapts a function to Policy.
type PolicyFunc func(ctx context.Context, msgs []trajectory.Message, tools []trajectory.Tool) (trajectory.Message, error)

// Act calls f.
func (f PolicyFunc) Act(ctx context.Context, msgs []trajectory.Message, tools []trajectory.Tool) (trajectory.Message, error) {
	return f(ctx, msgs, tools)
}

// Scripted is implemented by environments that can play without a model.
type Scripted interface {
	// Policies lists the scripted policy names; the first is the default.
	Policies() []string
	// Policy returns a fresh policy for one episode; seed drives its
	// randomness.
	Policy(name string, seed int64) (Policy, error)
}

// ErrUnknownPolicy is returned by Scripted.Policy for a name it lacks.
var ErrUnknownPolicy = errors.New("unknown scripted policy")

// ErrContextFull is what a Policy's error wraps when the conversation no
// longer fits the model's context (an OpenAI-compatible server's 400
// context_length_exceeded): Play ends such an episode as cut, as
// maxTurns does, once it has taken a turn.
var ErrContextFull = errors.New("the conversation does not fit the model's context")

// LastUser returns the content of the last user message, "" if none.
func LastUser(msgs []trajectory.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return msgs[i].Content
		}
	}
	return ""
}

// Assistant returns a plain-text assistant message.
func Assistant(text string) trajectory.Message {
	return trajectory.Message{Role: "assistant", Content: text}
}

// User returns a user message.
func User(text string) trajectory.Message {
	return trajectory.Message{Role: "user", Content: text}
}

// ToolResult returns a role "tool" message answering call id.
func ToolResult(id, name, content string) trajectory.Message {
	return trajectory.Message{Role: "tool", ToolCallID: id, Name: name, Content: content}
}

// Override is a setting that a scenario's payload fixes and that differs
// from the environment's own (its --env-opt value or default).
// NewEpisode plays the payload's, so that a scenario replayed from a file
// is the episode it recorded.
type Override struct {
	Key    string // the --env-opt key, e.g. "opponent"
	Env    string // the environment's value
	Stored string // the payload's value, the one played
}

// StoredSettings is implemented by environments whose scenario payloads
// carry settings that win over the environment's: hone-collect warns when
// a replay is given an --env-opt that the stored value overrides, which
// it otherwise dropped without a word.
type StoredSettings interface {
	// Overrides lists sc's stored settings that differ from the
	// environment's, nil when none does or the payload is unreadable
	// (NewEpisode refuses that one, naming the scenario).
	Overrides(sc Scenario) []Override
}

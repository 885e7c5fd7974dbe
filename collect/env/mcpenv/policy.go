package mcpenv

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/format/trajectory"
)

// Solution is a worked answer to a task: the tool calls to make, in
// order, and the final answer.
type Solution struct {
	Calls []SolutionCall `json:"calls"`
	// Answer is the final message; "" falls back to the payload's answer.
	Answer string `json:"answer,omitempty"`
}

// SolutionCall is one tool call of a Solution.
type SolutionCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"` // a JSON object; absent is {}
}

type asked struct {
	id       string
	p        Payload
	conflict string // another scenario with the same task but another solution
}

// remember records which scenario asks task p.Task.
func (e *Env) remember(id string, p Payload) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.asked == nil {
		e.asked = make(map[string]asked)
	}
	a := asked{id: id, p: p}
	if old, ok := e.asked[p.Task]; ok && old.id != id && !reflect.DeepEqual(old.p, p) {
		a.conflict = old.id
	}
	e.asked[p.Task] = a
}

// Policies implements env.Scripted: "replay" plays back the scenario's
// payload "solution", one tool call per turn through the same checks and
// MCP session a model's calls take, then answers.
func (e *Env) Policies() []string { return []string{"replay"} }

// Policy implements env.Scripted. The policy reads only the conversation:
// the task (first user message) names the scenario, the number of
// assistant turns so far the step of the solution.
func (e *Env) Policy(name string, _ int64) (env.Policy, error) {
	if name != "replay" {
		return nil, fmt.Errorf("mcp: %w %q (have %v)", env.ErrUnknownPolicy, name, e.Policies())
	}
	return env.PolicyFunc(e.replay), nil
}

func (e *Env) replay(_ context.Context, msgs []trajectory.Message, _ []trajectory.Tool) (trajectory.Message, error) {
	task, turns := "", 0
	for _, m := range msgs {
		switch {
		case m.Role == "user" && task == "":
			task = m.Content
		case m.Role == "assistant":
			turns++
		}
	}
	e.mu.Lock()
	a, ok := e.asked[task]
	e.mu.Unlock()
	switch {
	case !ok:
		return trajectory.Message{}, fmt.Errorf("mcp: replay: no started scenario asks %q", task)
	case a.conflict != "":
		return trajectory.Message{}, fmt.Errorf("mcp: replay: scenarios %s and %s ask the same task with different payloads", a.conflict, a.id)
	case a.p.Solution == nil:
		return trajectory.Message{}, fmt.Errorf("mcp: replay: scenario %s has no \"solution\" in its payload (want {\"calls\": [{\"name\": ..., \"arguments\": {...}}], \"answer\": ...})", a.id)
	}
	sol := a.p.Solution
	if turns < len(sol.Calls) {
		c := sol.Calls[turns]
		args := string(c.Arguments)
		if len(c.Arguments) == 0 || args == "null" {
			args = "{}"
		}
		return trajectory.Message{Role: "assistant", ToolCalls: []trajectory.ToolCall{
			{ID: fmt.Sprintf("call_%d", turns), Type: "function", Name: c.Name, Arguments: args},
		}}, nil
	}
	ans := sol.Answer
	if ans == "" {
		ans = a.p.Answer
	}
	if ans == "" {
		return trajectory.Message{}, fmt.Errorf("mcp: replay: scenario %s: solution has no answer and the payload none either", a.id)
	}
	return env.Assistant(ans), nil
}

package collect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/format/chatmsg"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/stageerr"
)

// TaskGenOptions configures GenerateTasks.
type TaskGenOptions struct {
	Tools       []trajectory.Tool // the server's tools
	N           int               // tasks wanted
	Seed        int64
	ValFraction float64 // share of tasks marked split "val" (the last ones)
	Model       ModelOptions
	Hint        string // optional guidance appended to the prompt
}

// taskSchema is the json_schema response format the model must follow.
const taskSchema = `{"type":"object","properties":{"tasks":{"type":"array","items":{"type":"object","properties":{"task":{"type":"string"},"answer":{"type":"string"}},"required":["task","answer"],"additionalProperties":false}}},"required":["tasks"],"additionalProperties":false}`

// GenerateTasks asks a model for N varied tasks that need the given tools,
// as ART's MCP•RL does, and returns them as mcp scenarios (payload
// {"task", "answer"}; an empty answer leaves scoring to hone-score).
func GenerateTasks(ctx context.Context, o TaskGenOptions) ([]env.Scenario, error) {
	if o.N <= 0 {
		return nil, stageerr.Usagef("the number of tasks must be positive")
	}
	if len(o.Tools) == 0 {
		return nil, errors.New("no tools to write tasks for")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Write %d varied, realistic tasks a user could give an assistant that has the tools below. Each task must need at least one of the tools; vary which tools, how many calls and the difficulty. Give a short expected answer when it is checkable, else an empty string.\n\nTools:\n", o.N)
	for _, t := range o.Tools {
		fmt.Fprintf(&b, "- %s: %s\n  arguments: %s\n", t.Name, t.Description, orDefault(t.Parameters, "{}"))
	}
	if o.Hint != "" {
		fmt.Fprintf(&b, "\n%s\n", o.Hint)
	}
	b.WriteString("\nReply with JSON: {\"tasks\": [{\"task\": \"...\", \"answer\": \"...\"}, ...]}.")
	m := NewModel(o.Model)
	req := &chatRequest{Model: o.Model.Model, Messages: []chatmsg.Message{{Role: "user", Content: b.String()}}, Seed: o.Seed,
		Temperature: o.Model.Temperature, MaxTokens: max(o.Model.MaxTokens, 0), ReturnTokenIDs: true,
		ResponseFormat: json.RawMessage(`{"type":"json_schema","json_schema":{"name":"tasks","strict":true,"schema":` + taskSchema + `}}`)}
	body, err := encodeRequest(req)
	if err != nil {
		return nil, fmt.Errorf("generate tasks: %w", err)
	}
	msg, err := m.call(ctx, body)
	if err != nil {
		return nil, fmt.Errorf("generate tasks: %w", err)
	}
	var out struct {
		Tasks []struct {
			Task   string `json:"task"`
			Answer string `json:"answer"`
		} `json:"tasks"`
	}
	text := strings.TrimSpace(msg.Content)
	text = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(text, "```json"), "```"), "```")
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		return nil, fmt.Errorf("generate tasks: the model's reply is not the JSON asked for: %w: %.200q", err, msg.Content)
	}
	var scs []env.Scenario
	seen := map[string]bool{}
	for _, t := range out.Tasks {
		task := strings.TrimSpace(t.Task)
		if task == "" || seen[task] {
			continue
		}
		seen[task] = true
		pl, _ := json.Marshal(map[string]string{"task": task, "answer": strings.TrimSpace(t.Answer)})
		scs = append(scs, env.Scenario{ID: fmt.Sprintf("mcp-%d-%03d", o.Seed, len(scs)), Env: "mcp", Payload: pl, Split: trajectory.SplitTrain})
	}
	if len(scs) == 0 {
		return nil, errors.New("generate tasks: the model gave no usable task")
	}
	if len(scs) > o.N {
		scs = scs[:o.N]
	}
	nVal := int(o.ValFraction * float64(len(scs)))
	for i := len(scs) - nVal; i < len(scs); i++ {
		scs[i].Split = trajectory.SplitVal
	}
	return scs, nil
}

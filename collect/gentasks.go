package collect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/collect/env/mcpenv"
	"github.com/hone-rl/hone/format/chatmsg"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/stageerr"
)

// TaskGenOptions configures GenerateTasks.
type TaskGenOptions struct {
	Tools       []trajectory.Tool // the server's tools
	Resources   []mcpenv.Resource // and its resources, shown to the writer too
	N           int               // tasks wanted, exactly
	Seed        int64             // request seed of the first call (the k-th call sends Seed+k) and id prefix
	ValFraction float64           // share of tasks marked split "val" (the last ones)
	Model       ModelOptions      // its TemplateKwargs go on every call, as a run's do
	Hint        string            // optional guidance appended to the prompt
	// Calls bounds the model calls: each asks for the tasks still
	// missing, until N valid ones are in hand (0: 5).
	Calls int
	// NoSummary drops the requirement that each task end by asking for a
	// summary of the work and a report of the results (ART's sixth
	// requirement), from the prompt and from the checks.
	NoSummary bool
}

// TaskGenStats says how GenerateTasks got its tasks.
type TaskGenStats struct {
	Calls      int            // model calls made
	Dropped    map[string]int // tasks refused, by reason
	Difficulty [6]int         // tasks kept per difficulty 1..5 (index 0 unused)
}

// String is a one-line account: calls, the difficulty histogram, drops.
func (s TaskGenStats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d model calls; difficulty", s.Calls)
	for d := 1; d <= 5; d++ {
		fmt.Fprintf(&b, " %d:%d", d, s.Difficulty[d])
	}
	return b.String() + "; dropped " + s.dropped()
}

// dropped lists the drops by reason, "none" without any.
func (s TaskGenStats) dropped() string {
	var parts []string
	for _, r := range dropReasons {
		if n := s.Dropped[r]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, r))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// The reasons a written task is dropped, in the order TaskGenStats prints
// them.
const (
	dropEmpty      = "without a task"
	dropDifficulty = "without a difficulty from 1 to 5"
	dropSummary    = "not asking for a summary"
	dropDuplicate  = "repeated"
	dropExtra      = "beyond the number asked for"
	dropReply      = "replies that are not the JSON asked for"
)

var dropReasons = []string{dropEmpty, dropDifficulty, dropSummary, dropDuplicate, dropExtra, dropReply}

// defaultTaskGenTokens is the completion budget of a call when the model
// options set none: ART's generate_scenarios asks for 8000.
const defaultTaskGenTokens = 8000

// GenerateTasks asks a model for exactly N varied tasks that need the
// given tools, as ART's MCP•RL does (art.mcp.generate_scenarios), and
// returns them as mcp scenarios with the payload {"task", "answer",
// "difficulty"} (an empty answer leaves scoring to hone-score).
//
// The prompt shows the tools and resources as JSON, asks for a difficulty
// from 1 to 5 per task and (unless NoSummary) that each task end by asking
// for a summary of the work done and a report of the results; the reply
// must follow a JSON schema that fixes the number of tasks. Each task is
// checked: a task text, an integer difficulty from 1 to 5, a request for a
// summary (the word "summary" or "summarize"), not a repeat of a kept task
// (ignoring case and spacing). While fewer than N pass, the model is asked
// again for the tasks still missing, shown those it already wrote, up to
// Calls calls; a reply that is not the JSON asked for is counted and asked
// again too. Fewer than N after the last call is an error that says why.
func GenerateTasks(ctx context.Context, o TaskGenOptions) ([]env.Scenario, TaskGenStats, error) {
	st := TaskGenStats{Dropped: map[string]int{}}
	if o.N <= 0 {
		return nil, st, stageerr.Usagef("the number of tasks must be positive")
	}
	if !(o.ValFraction >= 0 && o.ValFraction <= 1) { // NaN too
		return nil, st, stageerr.Usagef("--val-fraction %v: want a share in [0, 1], e.g. 0.1", o.ValFraction)
	}
	if len(o.Tools) == 0 {
		return nil, st, errors.New("no tools to write tasks for")
	}
	calls := o.Calls
	if calls <= 0 {
		calls = 5
	}
	maxTokens := o.Model.MaxTokens
	if maxTokens <= 0 {
		maxTokens = defaultTaskGenTokens
	}
	server, err := describeServer(o.Tools, o.Resources)
	if err != nil {
		return nil, st, fmt.Errorf("generate tasks: %w", err)
	}
	// The model is told the max_tokens sent, the default too, so that a
	// refusal of it names its value (overLimit).
	mo := o.Model
	mo.MaxTokens = maxTokens
	m := NewModel(mo)
	var kept []writtenTask
	seen := map[string]bool{}
	for st.Calls < calls && len(kept) < o.N {
		want := o.N - len(kept)
		req := &chatRequest{Model: o.Model.Model, Seed: o.Seed + int64(st.Calls),
			Messages:    []chatmsg.Message{{Role: "user", Content: taskPrompt(server, want, kept, o)}},
			Temperature: o.Model.Temperature, TopP: o.Model.TopP, MaxTokens: maxTokens, TemplateKwargs: o.Model.TemplateKwargs,
			ResponseFormat: json.RawMessage(`{"type":"json_schema","json_schema":{"name":"tasks","strict":true,"schema":` + taskSchema(want) + `}}`)}
		body, err := encodeRequest(req)
		if err != nil {
			return nil, st, fmt.Errorf("generate tasks: %w", err)
		}
		st.Calls++
		msg, err := m.call(ctx, body)
		if err != nil {
			// The server's words name its own max_tokens, not the flag
			// that sets it here.
			if ce := (*callError)(nil); errors.As(err, &ce) {
				if lerr := m.overLimit(ce); lerr != nil {
					err = lerr
				}
			}
			return nil, st, fmt.Errorf("generate tasks: call %d: %w", st.Calls, err)
		}
		tasks, err := parseTasks(msg.Content)
		if err != nil {
			st.Dropped[dropReply]++
			continue
		}
		for _, t := range tasks {
			reason := t.check(!o.NoSummary)
			key := strings.Join(strings.Fields(strings.ToLower(t.Task)), " ")
			switch {
			case reason != "":
			case seen[key]:
				reason = dropDuplicate
			case len(kept) == o.N:
				reason = dropExtra
			}
			if reason != "" {
				st.Dropped[reason]++
				continue
			}
			seen[key] = true
			kept = append(kept, t)
		}
	}
	if len(kept) < o.N {
		return nil, st, fmt.Errorf("generate tasks: %d valid tasks of %d after %d model calls (dropped %s); try more --calls, a larger --max-tokens or a stronger --model", len(kept), o.N, st.Calls, st.dropped())
	}
	scs := make([]env.Scenario, len(kept))
	for i, t := range kept {
		st.Difficulty[t.difficulty]++
		pl, err := json.Marshal(mcpenv.Payload{Task: strings.TrimSpace(t.Task), Answer: strings.TrimSpace(t.Answer), Difficulty: t.difficulty})
		if err != nil {
			return nil, st, fmt.Errorf("generate tasks: %w", err)
		}
		scs[i] = env.Scenario{ID: fmt.Sprintf("mcp-%d-%03d", o.Seed, i), Env: "mcp", Payload: pl, Split: trajectory.SplitTrain}
	}
	nVal := shareOf(o.ValFraction, len(scs))
	for i := len(scs) - nVal; i < len(scs); i++ {
		scs[i].Split = trajectory.SplitVal
	}
	return scs, st, nil
}

// shareOf is the whole number of n's items that fraction f (in [0, 1])
// covers, f taken as the decimal it is written as (the shortest one that
// reads back as f): 0.29 of 100 is 29, where the float product 28.999…
// would be cut to 28.
func shareOf(f float64, n int) int {
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
	if !ok {
		return int(f * float64(n))
	}
	r.Mul(r, new(big.Rat).SetInt64(int64(n)))
	return int(new(big.Int).Quo(r.Num(), r.Denom()).Int64())
}

// writtenTask is one task of a reply, as written; difficulty is set by
// check.
type writtenTask struct {
	Task       string          `json:"task"`
	Answer     string          `json:"answer"`
	Difficulty json.RawMessage `json:"difficulty"`
	difficulty int
}

// check returns why t is not a valid task, or "".
func (t *writtenTask) check(summary bool) string {
	if strings.TrimSpace(t.Task) == "" {
		return dropEmpty
	}
	var d float64
	if json.Unmarshal(t.Difficulty, &d) != nil || d != math.Trunc(d) || d < 1 || d > 5 {
		return dropDifficulty
	}
	t.difficulty = int(d)
	if summary && !mentionsSummary(t.Task) {
		return dropSummary
	}
	return ""
}

// mentionsSummary: the task asks for a summary ("summary", "summarize",
// "summarise", any case).
func mentionsSummary(task string) bool {
	return strings.Contains(strings.ToLower(task), "summar")
}

// parseTasks reads a reply: the JSON object asked for, possibly inside a
// Markdown code fence.
func parseTasks(content string) ([]writtenTask, error) {
	text := strings.TrimSpace(content)
	if rest, ok := strings.CutPrefix(text, "```"); ok {
		rest = strings.TrimPrefix(rest, "json")
		text = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "```"))
	}
	var out struct {
		Tasks []writtenTask `json:"tasks"`
	}
	dec := json.NewDecoder(strings.NewReader(text))
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	if out.Tasks == nil {
		return nil, errors.New(`no "tasks" array`)
	}
	return out.Tasks, nil
}

// taskSchema is the json_schema response format of a call asking for n
// tasks: exactly n items (minItems = maxItems = n, as ART's schema),
// each with a task, an answer and an integer difficulty from 1 to 5.
func taskSchema(n int) string {
	return fmt.Sprintf(`{"type":"object","properties":{"tasks":{"type":"array","minItems":%d,"maxItems":%d,"items":{"type":"object","properties":{"task":{"type":"string"},"answer":{"type":"string"},"difficulty":{"type":"integer","minimum":1,"maximum":5}},"required":["task","answer","difficulty"],"additionalProperties":false}}},"required":["tasks"],"additionalProperties":false}`, n, n)
}

// describeServer is the server's tools and resources as the prompt shows
// them: indented JSON, the tool schemas as the server gave them.
func describeServer(tools []trajectory.Tool, resources []mcpenv.Resource) (string, error) {
	type tool struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	ts := make([]tool, len(tools))
	for i, t := range tools {
		ts[i] = tool{Name: t.Name, Description: t.Description, Parameters: json.RawMessage(orDefault(t.Parameters, "{}"))}
		if !json.Valid(ts[i].Parameters) {
			return "", fmt.Errorf("tool %s: parameters are not JSON", t.Name)
		}
	}
	var b bytes.Buffer
	b.WriteString("Tools:\n")
	tj, err := json.MarshalIndent(ts, "", "  ")
	if err != nil {
		return "", err
	}
	b.Write(tj)
	b.WriteString("\n\nResources:\n")
	if len(resources) == 0 {
		b.WriteString("none\n")
		return b.String(), nil
	}
	rj, err := json.MarshalIndent(resources, "", "  ")
	if err != nil {
		return "", err
	}
	b.Write(rj)
	b.WriteString("\n")
	return b.String(), nil
}

// taskPrompt is the request for n more tasks. Hone's own wording of the
// requirements of ART's generate_scenarios prompt; kept lists the tasks
// already accepted, so that a second call does not repeat them.
func taskPrompt(server string, n int, kept []writtenTask, o TaskGenOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You write tasks for training and testing an AI assistant that works through the tools of an MCP (Model Context Protocol) server. The server offers what is listed below.\n\n%s\n", server)
	fmt.Fprintf(&b, "Write %d different tasks that a real user could give this assistant. Each task:\n", n)
	b.WriteString("- can be done with the tools above, without naming which tools to use;\n")
	b.WriteString("- is something a user would actually want done;\n")
	b.WriteString("- differs from the others in purpose and in the tools it needs: mix short tasks (one or two tool calls) with long ones that take many calls;\n")
	b.WriteString("- has a difficulty, an integer from 1 (a single tool call) to 5 (many steps and an analysis of what they return);\n")
	if !o.NoSummary {
		b.WriteString("- ends by asking the assistant for a summary of the work it did and a thorough report and analysis of the results;\n")
	}
	b.WriteString("- has an answer: the short expected final answer when one can be checked, else an empty string.\n")
	if len(kept) > 0 {
		b.WriteString("\nThese tasks are already written; do not repeat them:\n")
		for _, t := range kept {
			fmt.Fprintf(&b, "- %s\n", strings.TrimSpace(t.Task))
		}
	}
	if o.Hint != "" {
		fmt.Fprintf(&b, "\nFollow these instructions too:\n%s\n", o.Hint)
	}
	fmt.Fprintf(&b, "\nReply with JSON only, exactly %d tasks: {\"tasks\": [{\"task\": \"...\", \"difficulty\": 1, \"answer\": \"...\"}, ...]}.", n)
	return b.String()
}

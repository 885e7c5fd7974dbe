package trajectory

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/hone-rl/hone/format/chatmsg"
)

// SchemaVersion is the version of the row layout this build writes and the
// newest it reads. It is stored in the file's key-value metadata under
// MetadataKeySchemaVersion. Version 2 added additional_histories, logs,
// group_metadata and group_metrics; version 1 files read with those empty.
const SchemaVersion = 2

// MetadataKeySchemaVersion is the Parquet key-value metadata key that holds
// the schema version as a decimal string.
const MetadataKeySchemaVersion = "hone.schema_version"

// Splits a scenario can belong to.
const (
	SplitTrain = "train"
	SplitVal   = "val"
	SplitTest  = "test"
)

// Group is the unit the writer takes and the reader returns: all attempts at
// one scenario. A group is never split across row groups or files.
type Group struct {
	ID           string
	Trajectories []Trajectory
	// Metadata and Metrics describe the group as a whole (ART's
	// TrajectoryGroup.metadata and .metrics), not any one attempt. Files
	// repeat them on every row of the group.
	Metadata map[string]string
	Metrics  map[string]float64
}

// Trajectory is one episode: one row in a trajectory file.
type Trajectory struct {
	Run   string // run name
	Step  int64  // adapter version (training step) that produced the episode
	Model string // model name asked for (hone-collect's --model, a proxied request's "model"), e.g. "qwen3-0.6b@42"
	// Adapter is the model the server answered with (its reply's
	// "model", the last assistant turn's AnswerModel): a "<run>@<N>"
	// adapter of hone-serve or vLLM, or the base model's served name
	// (hone-serve's --served-model-name, by default the model folder's
	// name), so the base model is not "". "" when no turn names one: a
	// scripted policy, a server that answers without "model", rows
	// imported without it.
	Adapter    string
	ScenarioID string
	Split      string // SplitTrain, SplitVal, SplitTest or ""
	Payload    string // scenario payload, a JSON document ("" when none)
	GroupID    string
	ID         string // trajectory id, unique within an input set
	Env        string // environment name
	Messages   []Message
	Tools      []Tool // tools offered to the model
	// AdditionalHistories are further conversations of the same episode
	// (a sub-agent's, or the turns before a summary replaced them), each
	// with its own tools. Training packs each as a sequence of its own
	// with the trajectory's reward; a judge sees them all.
	AdditionalHistories []History
	// Logs are free-text lines about the episode (ART's Trajectory.logs),
	// kept for people; nothing trains on them.
	Logs []string
	// Reward is nil until the trajectory is scored; a scored 0 is a
	// pointer to 0, and both survive a round trip.
	Reward           *float64
	RewardComponents []RewardComponent
	Metrics          map[string]float64
	Metadata         map[string]string
	Error            string // why the episode failed; "" when it did not
	// Timestamps are stored with nanosecond precision (so from 1677-09-21
	// to 2262-04-11) and read back in UTC; the zero time means "not
	// recorded" and is stored as null.
	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
}

// Message is one chat turn in the OpenAI chat shape, plus what the policy's
// server reported for the turns it produced. Chat and FromChat convert it
// to and from format/chatmsg's Message, the shape's one codec.
type Message struct {
	Role string // system, user, assistant, tool (or developer, ...)
	// Content is the message text. When the original content was not a plain
	// string (a list of parts, or null), Content holds the text parts joined
	// and ContentParts holds the original JSON value exactly (compacted),
	// which export restores.
	Content      string
	ContentParts string
	ToolCalls    []ToolCall
	ToolCallID   string // for role "tool": the call it answers
	Name         string // optional participant or tool name
	// ReasoningContent is the model's reasoning when the server returned
	// it apart from Content (vLLM's reasoning parsers, e.g. Qwen3's
	// <think> block); chat templates take it as reasoning_content.
	ReasoningContent string

	// Set on assistant turns the policy produced.
	Trainable    bool
	TokenIDs     []int32   // sampled token ids, when the server gave them
	Logprobs     []float32 // sampling logprob per token, when given (same length as TokenIDs when both are set)
	FinishReason string
	AnswerModel  string        // the model/adapter that answered this turn
	Latency      time.Duration // wall time of the completion request
}

// History is one conversation of a trajectory apart from its main one:
// the messages exchanged and the tools offered in it.
type History struct {
	Messages []Message
	Tools    []Tool
}

// ToolCall is one function call requested by an assistant turn, and Tool
// one tool offered to the model: both are the OpenAI chat shape's own
// types (format/chatmsg), which JSON Lines files and every stage write and
// read the same way.
type (
	ToolCall = chatmsg.ToolCall
	Tool     = chatmsg.Tool
)

// RewardComponent is one named part of a reward, with the scorer's
// explanation of it. In JSON (hone-inspect head, to-jsonl) its keys are
// snake_case like every other field of a row.
type RewardComponent struct {
	Name        string  `json:"name"`
	Value       float64 `json:"value"`
	Explanation string  `json:"explanation,omitempty"`
}

// SampledAt is when the trajectory's episode ran, as it records it: its
// start, else its creation; zero when it records neither. A chat template
// that prints the date printed this one when the server rendered it.
func (t *Trajectory) SampledAt() time.Time {
	if !t.StartedAt.IsZero() {
		return t.StartedAt
	}
	return t.CreatedAt
}

// Float64 returns a pointer to v, for setting Trajectory.Reward.
func Float64(v float64) *float64 { return &v }

// Validate checks one trajectory on its own: ids present, split known, JSON
// fields well formed, timestamps a file can hold, token ids and logprobs of
// equal length. It does not check uniqueness across a file; the Reader
// does that.
func (t *Trajectory) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &fieldError{field: field, msg: fmt.Sprintf(format, args...)})
	}
	if t.ID == "" {
		bad("trajectory_id", "empty")
	}
	if t.GroupID == "" {
		bad("group_id", "empty")
	}
	switch t.Split {
	case "", SplitTrain, SplitVal, SplitTest:
	default:
		bad("split", "%q is not train, val or test", t.Split)
	}
	if t.Payload != "" && !json.Valid([]byte(t.Payload)) {
		bad("payload", "not valid JSON")
	}
	// A file holds a timestamp as int64 nanoseconds since 1970.
	minTime, maxTime := time.Unix(0, math.MinInt64).UTC(), time.Unix(0, math.MaxInt64).UTC()
	for _, ts := range []struct {
		field string
		at    time.Time
	}{{"created_at", t.CreatedAt}, {"started_at", t.StartedAt}, {"finished_at", t.FinishedAt}} {
		if !ts.at.IsZero() && (ts.at.Before(minTime) || ts.at.After(maxTime)) {
			bad(ts.field, "%s is outside the nanosecond timestamps a file holds (%s to %s)",
				ts.at.Format(time.RFC3339Nano), minTime.Format(time.RFC3339Nano), maxTime.Format(time.RFC3339Nano))
		}
	}
	validateHistory(bad, "", t.Messages, t.Tools)
	for i := range t.AdditionalHistories {
		h := &t.AdditionalHistories[i]
		validateHistory(bad, fmt.Sprintf("additional_histories[%d].", i), h.Messages, h.Tools)
	}
	if len(errs) == 0 {
		return nil
	}
	return &InputError{Row: -1, Group: t.GroupID, Field: firstField(errs[0]), Err: errors.Join(errs...)}
}

// validateHistory checks one conversation's messages and tools; prefix
// names the history in field names ("" for the main one).
func validateHistory(bad func(field, format string, args ...any), prefix string, msgs []Message, tools []Tool) {
	for i, m := range msgs {
		f := fmt.Sprintf("%smessages[%d]", prefix, i)
		if m.Role == "" {
			bad(f+".role", "empty")
		}
		if m.ContentParts != "" {
			// What the import keeps here (FromChat) and takes back from
			// to-jsonl's lines: null or a list of content parts.
			if !json.Valid([]byte(m.ContentParts)) {
				bad(f+".content_parts", "not valid JSON")
			} else if _, err := chatmsg.ContentText(json.RawMessage(m.ContentParts)); err != nil {
				bad(f+".content_parts", "%v", err)
			}
		}
		if len(m.Logprobs) != 0 && len(m.TokenIDs) != 0 && len(m.Logprobs) != len(m.TokenIDs) {
			bad(f+".logprobs", "%d logprobs for %d token ids", len(m.Logprobs), len(m.TokenIDs))
		}
		for j, c := range m.ToolCalls {
			if c.Name == "" {
				bad(fmt.Sprintf("%s.tool_calls[%d].name", f, j), "empty")
			}
		}
	}
	for i, tool := range tools {
		if tool.Name == "" {
			bad(fmt.Sprintf("%stools[%d].name", prefix, i), "empty")
		}
		if tool.Parameters != "" && !json.Valid([]byte(tool.Parameters)) {
			bad(fmt.Sprintf("%stools[%d].parameters", prefix, i), "not valid JSON")
		}
	}
}

package trajectory

import (
	"math"
	"time"
)

// row is the Parquet layout of a Trajectory. Field tags name the columns;
// they are the file format, so renaming one is a schema version change.
// Lists use the standard LIST annotation and maps the MAP annotation, so
// DuckDB, Arrow and pandas see ordinary nested types.
type row struct {
	Run              string             `parquet:"run"`
	Step             int64              `parquet:"step"`
	Model            string             `parquet:"model"`
	Adapter          string             `parquet:"adapter"`
	ScenarioID       string             `parquet:"scenario_id"`
	Split            string             `parquet:"split"`
	Payload          string             `parquet:"payload"`
	GroupID          string             `parquet:"group_id"`
	TrajectoryID     string             `parquet:"trajectory_id"`
	Env              string             `parquet:"env"`
	Messages         []messageRow       `parquet:"messages,list"`
	Tools            []toolRow          `parquet:"tools,list"`
	Reward           *float64           `parquet:"reward,optional"`
	RewardComponents []componentRow     `parquet:"reward_components,list"`
	Metrics          map[string]float64 `parquet:"metrics"`
	Metadata         map[string]string  `parquet:"metadata"`
	Error            string             `parquet:"error"`
	CreatedAt        *int64             `parquet:"created_at,optional,timestamp(nanosecond)"`
	StartedAt        *int64             `parquet:"started_at,optional,timestamp(nanosecond)"`
	FinishedAt       *int64             `parquet:"finished_at,optional,timestamp(nanosecond)"`
	// Schema version 2 added the columns below. A version 1 file lacks
	// them and reads with them empty (addedColumns).
	AdditionalHistories []historyRow `parquet:"additional_histories,list"`
	Logs                []string     `parquet:"logs,list"`
	// The group's own metadata and metrics, repeated on every row of the
	// group (as ART's Parquet logs do), so one row reads on its own and a
	// query needs no join; the reader checks that the rows agree.
	GroupMetadata map[string]string  `parquet:"group_metadata"`
	GroupMetrics  map[string]float64 `parquet:"group_metrics"`
}

// historyRow is one of a trajectory's additional histories.
type historyRow struct {
	Messages []messageRow `parquet:"messages,list"`
	Tools    []toolRow    `parquet:"tools,list"`
}

type messageRow struct {
	Role         string        `parquet:"role"`
	Content      string        `parquet:"content"`
	ContentParts string        `parquet:"content_parts"`
	ToolCalls    []toolCallRow `parquet:"tool_calls,list"`
	ToolCallID   string        `parquet:"tool_call_id"`
	Name         string        `parquet:"name"`
	// ReasoningContent was added after the first files were written; it
	// is optional so that files without the column still read.
	ReasoningContent string    `parquet:"reasoning_content,optional"`
	Trainable        bool      `parquet:"trainable"`
	TokenIDs         []int32   `parquet:"token_ids,list"`
	Logprobs         []float32 `parquet:"logprobs,list"`
	FinishReason     string    `parquet:"finish_reason"`
	AnswerModel      string    `parquet:"answer_model"`
	LatencyMS        float64   `parquet:"latency_ms"`
}

type toolCallRow struct {
	ID        string `parquet:"id"`
	Type      string `parquet:"type"`
	Name      string `parquet:"name"`
	Arguments string `parquet:"arguments"`
}

type toolRow struct {
	Type        string `parquet:"type"`
	Name        string `parquet:"name"`
	Description string `parquet:"description"`
	Parameters  string `parquet:"parameters"`
}

type componentRow struct {
	Name        string  `parquet:"name"`
	Value       float64 `parquet:"value"`
	Explanation string  `parquet:"explanation"`
}

func toRow(t *Trajectory) row {
	r := row{
		Run: t.Run, Step: t.Step, Model: t.Model, Adapter: t.Adapter,
		ScenarioID: t.ScenarioID, Split: t.Split, Payload: t.Payload,
		GroupID: t.GroupID, TrajectoryID: t.ID, Env: t.Env,
		Metrics: t.Metrics, Metadata: t.Metadata, Error: t.Error,
		CreatedAt: timeToNanos(t.CreatedAt), StartedAt: timeToNanos(t.StartedAt),
		FinishedAt: timeToNanos(t.FinishedAt),
		Messages:   messagesToRows(t.Messages), Tools: toolsToRows(t.Tools), Logs: t.Logs,
	}
	if t.Reward != nil {
		v := *t.Reward
		r.Reward = &v
	}
	r.RewardComponents = mapSlice(t.RewardComponents, func(c RewardComponent) componentRow { return componentRow(c) })
	r.AdditionalHistories = mapSlice(t.AdditionalHistories, func(h History) historyRow {
		return historyRow{Messages: messagesToRows(h.Messages), Tools: toolsToRows(h.Tools)}
	})
	return r
}

// mapSlice returns f of each element of xs, in order; nil for none, so
// that the rows of empty lists are null and come back nil.
func mapSlice[T, U any](xs []T, f func(T) U) []U {
	if len(xs) == 0 {
		return nil
	}
	out := make([]U, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

func messagesToRows(msgs []Message) []messageRow {
	return mapSlice(msgs, func(m Message) messageRow {
		return messageRow{
			Role: m.Role, Content: m.Content, ContentParts: m.ContentParts,
			ToolCallID: m.ToolCallID, Name: m.Name, Trainable: m.Trainable,
			ReasoningContent: m.ReasoningContent,
			TokenIDs:         m.TokenIDs, Logprobs: m.Logprobs, FinishReason: m.FinishReason,
			AnswerModel: m.AnswerModel, LatencyMS: float64(m.Latency) / 1e6,
			ToolCalls: mapSlice(m.ToolCalls, func(c ToolCall) toolCallRow { return toolCallRow(c) }),
		}
	})
}

func toolsToRows(tools []Tool) []toolRow {
	return mapSlice(tools, func(t Tool) toolRow { return toolRow(t) })
}

// fromRow converts a decoded row. Slices and maps that are empty come back
// nil, so a round trip is exact up to nil versus empty.
func fromRow(r *row) Trajectory {
	t := Trajectory{
		Run: r.Run, Step: r.Step, Model: r.Model, Adapter: r.Adapter,
		ScenarioID: r.ScenarioID, Split: r.Split, Payload: r.Payload,
		GroupID: r.GroupID, ID: r.TrajectoryID, Env: r.Env, Error: r.Error,
		CreatedAt: nanosToTime(r.CreatedAt), StartedAt: nanosToTime(r.StartedAt),
		FinishedAt: nanosToTime(r.FinishedAt),
		Messages:   messagesFromRows(r.Messages), Tools: toolsFromRows(r.Tools),
	}
	if r.Reward != nil {
		v := *r.Reward
		t.Reward = &v
	}
	if len(r.Metrics) > 0 {
		t.Metrics = r.Metrics
	}
	if len(r.Metadata) > 0 {
		t.Metadata = r.Metadata
	}
	if len(r.Logs) > 0 {
		t.Logs = r.Logs
	}
	t.RewardComponents = mapSlice(r.RewardComponents, func(c componentRow) RewardComponent { return RewardComponent(c) })
	t.AdditionalHistories = mapSlice(r.AdditionalHistories, func(h historyRow) History {
		return History{Messages: messagesFromRows(h.Messages), Tools: toolsFromRows(h.Tools)}
	})
	return t
}

func messagesFromRows(rows []messageRow) []Message {
	return mapSlice(rows, func(mr messageRow) Message {
		m := Message{
			Role: mr.Role, Content: mr.Content, ContentParts: mr.ContentParts,
			ToolCallID: mr.ToolCallID, Name: mr.Name, Trainable: mr.Trainable,
			ReasoningContent: mr.ReasoningContent,
			FinishReason:     mr.FinishReason, AnswerModel: mr.AnswerModel,
			Latency:   time.Duration(math.Round(mr.LatencyMS * 1e6)),
			ToolCalls: mapSlice(mr.ToolCalls, func(c toolCallRow) ToolCall { return ToolCall(c) }),
		}
		if len(mr.TokenIDs) > 0 {
			m.TokenIDs = mr.TokenIDs
		}
		if len(mr.Logprobs) > 0 {
			m.Logprobs = mr.Logprobs
		}
		return m
	})
}

func toolsFromRows(rows []toolRow) []Tool {
	return mapSlice(rows, func(t toolRow) Tool { return Tool(t) })
}

// timeToNanos stores the zero time as null, so "not recorded" stays
// distinguishable from the Unix epoch.
func timeToNanos(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	n := t.UnixNano()
	return &n
}

func nanosToTime(n *int64) time.Time {
	if n == nil {
		return time.Time{}
	}
	return time.Unix(0, *n).UTC()
}

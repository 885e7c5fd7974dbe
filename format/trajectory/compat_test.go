package trajectory

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
)

// messageRowV1 and rowV1 are the row layout as first released, before the
// optional reasoning_content column. Files written then must still read.
type messageRowV1 struct {
	Role         string        `parquet:"role"`
	Content      string        `parquet:"content"`
	ContentParts string        `parquet:"content_parts"`
	ToolCalls    []toolCallRow `parquet:"tool_calls,list"`
	ToolCallID   string        `parquet:"tool_call_id"`
	Name         string        `parquet:"name"`
	Trainable    bool          `parquet:"trainable"`
	TokenIDs     []int32       `parquet:"token_ids,list"`
	Logprobs     []float32     `parquet:"logprobs,list"`
	FinishReason string        `parquet:"finish_reason"`
	AnswerModel  string        `parquet:"answer_model"`
	LatencyMS    float64       `parquet:"latency_ms"`
}

type rowV1 struct {
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
	Messages         []messageRowV1     `parquet:"messages,list"`
	Tools            []toolRow          `parquet:"tools,list"`
	Reward           *float64           `parquet:"reward,optional"`
	RewardComponents []componentRow     `parquet:"reward_components,list"`
	Metrics          map[string]float64 `parquet:"metrics"`
	Metadata         map[string]string  `parquet:"metadata"`
	Error            string             `parquet:"error"`
	CreatedAt        *int64             `parquet:"created_at,optional,timestamp(nanosecond)"`
	StartedAt        *int64             `parquet:"started_at,optional,timestamp(nanosecond)"`
	FinishedAt       *int64             `parquet:"finished_at,optional,timestamp(nanosecond)"`
}

func toRowV1(t *Trajectory) rowV1 {
	r := toRow(t)
	v := rowV1{Run: r.Run, Step: r.Step, Model: r.Model, Adapter: r.Adapter, ScenarioID: r.ScenarioID,
		Split: r.Split, Payload: r.Payload, GroupID: r.GroupID, TrajectoryID: r.TrajectoryID, Env: r.Env,
		Tools: r.Tools, Reward: r.Reward, RewardComponents: r.RewardComponents, Metrics: r.Metrics,
		Metadata: r.Metadata, Error: r.Error, CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt}
	for _, m := range r.Messages {
		v.Messages = append(v.Messages, messageRowV1{Role: m.Role, Content: m.Content, ContentParts: m.ContentParts,
			ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, Name: m.Name, Trainable: m.Trainable,
			TokenIDs: m.TokenIDs, Logprobs: m.Logprobs, FinishReason: m.FinishReason,
			AnswerModel: m.AnswerModel, LatencyMS: m.LatencyMS})
	}
	return v
}

func TestReasoningContentRoundTrip(t *testing.T) {
	groups := sampleGroups(11, 2, 2)
	if groups[0].Trajectories[0].Messages[2].ReasoningContent == "" {
		t.Fatal("sample lacks reasoning content")
	}
	got, err := ReadFile(context.Background(), writeTemp(t, "r.parquet", groups, WriterOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	diffGroups(t, groups, got)

	var buf bytes.Buffer
	if err := ExportJSONL(&buf, groups...); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"reasoning_content":"Need to search. 検索\n"`) {
		t.Errorf("JSONL lacks reasoning_content:\n%.600s", buf.String())
	}
	back, _, err := ImportJSONL(context.Background(), &buf, "r.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	diffGroups(t, groups, back)

	// The column is in the schema, optional.
	col, ok := Schema().Lookup("messages", "list", "element", "reasoning_content")
	if !ok || !col.Node.Optional() {
		t.Fatalf("Schema() lacks an optional messages.list.element.reasoning_content column")
	}
}

func TestReadFileWithoutReasoningColumn(t *testing.T) {
	groups := sampleGroups(12, 3, 2)
	var rows []rowV1
	for gi := range groups {
		g := &groups[gi]
		g.Metadata, g.Metrics = nil, nil // what an old file cannot hold
		for i := range g.Trajectories {
			g.Trajectories[i].AdditionalHistories, g.Trajectories[i].Logs = nil, nil
			rows = append(rows, toRowV1(&g.Trajectories[i]))
			for j := range g.Trajectories[i].Messages {
				g.Trajectories[i].Messages[j].ReasoningContent = "" // what an old file cannot hold
			}
		}
	}
	path := filepath.Join(t.TempDir(), "v1.parquet")
	writeRaw(t, path, rows, MetadataKeySchemaVersion, "1")
	got, err := ReadFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	diffGroups(t, groups, got)
}

func TestInputErrorTellsBadInputFromIO(t *testing.T) {
	dir := t.TempDir()
	// A row that fails validation.
	g := sampleGroups(13, 1, 2)[0]
	g.Trajectories[1].Split = "dev"
	path := filepath.Join(dir, "bad.parquet")
	writeRaw(t, path, []row{toRow(&g.Trajectories[0]), toRow(&g.Trajectories[1])})
	err := readErr(t, path)
	var ie *InputError
	if !errors.As(err, &ie) || !errors.Is(err, ErrBadInput) {
		t.Fatalf("error %v (%T) is not an *InputError", err, err)
	}
	if ie.File != path || ie.Row != 1 || ie.Group != g.ID || ie.Field != "split" {
		t.Errorf("InputError{File: %q, Row: %d, Group: %q, Field: %q}, want %q, 1, %q, split", ie.File, ie.Row, ie.Group, ie.Field, path, g.ID)
	}
	mustContain(t, err, path, "row 1", `split: "dev" is not train, val or test`)

	// A file that is not Parquet.
	junk := filepath.Join(dir, "junk.parquet")
	os.WriteFile(junk, []byte("not parquet at all, not even close"), 0o644)
	if err := readErr(t, junk); !errors.As(err, &ie) || ie.File != junk {
		t.Errorf("junk file: error %v, want an *InputError naming it", err)
	}

	// A JSONL line that fails.
	_, _, err = ImportJSONL(context.Background(), strings.NewReader("{\"messages\":[]}\n{\"messages\":[{\"content\":\"x\"}]}"), "in.jsonl")
	if !errors.As(err, &ie) || ie.File != "in.jsonl" || ie.Row != 2 {
		t.Errorf("jsonl: error %v, want an *InputError at in.jsonl line 2", err)
	}

	// Validate on its own names the first field.
	tr := Trajectory{GroupID: "g"}
	if err := tr.Validate(); !errors.As(err, &ie) || ie.Field != "trajectory_id" {
		t.Errorf("Validate: %v, want an *InputError on trajectory_id", err)
	}

	// An operating-system error is not bad input.
	if err := badInput("f", 0, "", "", &fs.PathError{Op: "read", Path: "f", Err: errors.New("EIO")}); errors.Is(err, ErrBadInput) {
		t.Errorf("a read failure counted as bad input: %v", err)
	}
	if runtimeIsRoot() {
		return
	}
	locked := filepath.Join(dir, "locked.parquet")
	if err := WriteFile(context.Background(), locked, sampleGroups(14, 1, 1), WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	_, err = Open(context.Background(), fileset.Files(locked))
	if err == nil || errors.Is(err, ErrBadInput) {
		t.Errorf("unreadable file: error %v, want a non-input error", err)
	}
}

func runtimeIsRoot() bool { return os.Geteuid() == 0 }

package trajectory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/parquet-go/parquet-go"
)

// sampleGroups builds nGroups groups of size trajectories that together use
// every field, seeded so failures reproduce.
func sampleGroups(seed uint64, nGroups, size int) []Group {
	rng := rand.New(rand.NewPCG(seed, 1))
	base := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	var groups []Group
	for gi := range nGroups {
		g := Group{ID: fmt.Sprintf("g%03d-ßcenario", gi)}
		if gi%2 == 0 { // odd groups keep no group fields, as v1 files
			g.Metadata = map[string]string{"scenario": fmt.Sprintf("s-%d", gi), "ü": "ß"}
			g.Metrics = map[string]float64{"judge_calls": float64(gi), "spread": rng.Float64()}
		}
		for ti := range size {
			t := Trajectory{
				Run: "run-α", Step: int64(gi % 3), Model: "qwen3@2", Adapter: "adapters/run/step-000002",
				ScenarioID: fmt.Sprintf("scn-%d", gi), Split: []string{SplitTrain, SplitVal, SplitTest, ""}[gi%4],
				Payload: `{"question":"2+2?","nested":{"a":[1,2,{"b":null}]}}`,
				GroupID: g.ID, ID: fmt.Sprintf("%s/t%d", g.ID, ti), Env: []string{"tictactoe", "mcp:fs"}[ti%2],
				Messages: []Message{
					{Role: "system", Content: "You are 🤖 helpful. 日本語テキスト"},
					{Role: "user", Content: "hi", ContentParts: `[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]`},
					{Role: "assistant", ContentParts: "null", Trainable: true, ReasoningContent: "Need to search. 検索\n",
						ToolCalls: []ToolCall{{ID: "call_1", Type: "function", Name: "search",
							Arguments: `{"q":"x","filters":{"k":[1,{"deep":"é"}]}}`}},
						TokenIDs: []int32{1, 2, int32(rng.IntN(150000))}, Logprobs: []float32{-0.5, -1.25, float32(-rng.Float64())},
						FinishReason: "tool_calls", AnswerModel: "qwen3@2", Latency: 1234567 * time.Nanosecond},
					{Role: "tool", Content: "result\x00with nul", ToolCallID: "call_1", Name: "search"},
					{Role: "assistant", Content: "done", Trainable: true, TokenIDs: []int32{7}, FinishReason: "stop"},
				},
				Tools: []Tool{{Type: "function", Name: "search", Description: "find things",
					Parameters: `{"type":"object","properties":{"q":{"type":"string"}}}`}},
				RewardComponents: []RewardComponent{{Name: "correct", Value: 1, Explanation: "matched"}, {Name: "len", Value: -0.25}},
				AdditionalHistories: []History{
					{Messages: []Message{
						{Role: "system", Content: "You summarise. 要約"},
						{Role: "user", Content: "sum up"},
						{Role: "assistant", Content: "short", Trainable: true, TokenIDs: []int32{5, int32(rng.IntN(150000))},
							Logprobs: []float32{-0.125, float32(-rng.Float64())}, FinishReason: "stop"},
					}},
					{Messages: []Message{{Role: "user", Content: "sub-agent"}, {Role: "assistant", Trainable: true, ContentParts: "null",
						ToolCalls: []ToolCall{{ID: "c9", Type: "function", Name: "look", Arguments: `{"at":"x"}`}}}},
						Tools: []Tool{{Type: "function", Name: "look", Parameters: `{"type":"object"}`}}},
				},
				Logs:       []string{"started", "tool call took 3 s ⏱"},
				Metrics:    map[string]float64{"turns": 3, "acc": rng.Float64()},
				Metadata:   map[string]string{"k": "v", "ünï": "cödé"},
				CreatedAt:  base.Add(time.Duration(gi) * time.Second),
				StartedAt:  base.Add(time.Duration(gi)*time.Second + time.Millisecond),
				FinishedAt: base.Add(time.Duration(gi)*time.Second + 3*time.Second),
			}
			switch ti % 4 {
			case 0:
				t.Reward = Float64(rng.NormFloat64())
			case 1:
				t.Reward = Float64(0) // scored zero, not null
			case 2:
				// unscored: reward stays nil; and an episode with nothing else
				t.Messages, t.Tools, t.RewardComponents, t.Metrics, t.Metadata = nil, nil, nil, nil, nil
				t.AdditionalHistories, t.Logs = nil, nil
				t.Error = "env crashed: ☠"
				t.CreatedAt, t.StartedAt, t.FinishedAt = time.Time{}, time.Time{}, time.Time{}
			case 3:
				t.Reward = Float64(-1)
			}
			g.Trajectories = append(g.Trajectories, t)
		}
		groups = append(groups, g)
	}
	return groups
}

func writeTemp(t *testing.T, name string, groups []Group, opts WriterOptions) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := WriteFile(context.Background(), path, groups, opts); err != nil {
		t.Fatal(err)
	}
	return path
}

func diffGroups(t *testing.T, want, got []Group) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("got %d groups, want %d", len(got), len(want))
	}
	for i := range want {
		if want[i].ID != got[i].ID || len(want[i].Trajectories) != len(got[i].Trajectories) {
			t.Fatalf("group %d: got %q with %d trajectories, want %q with %d", i,
				got[i].ID, len(got[i].Trajectories), want[i].ID, len(want[i].Trajectories))
		}
		if !reflect.DeepEqual(want[i].Metadata, got[i].Metadata) || !reflect.DeepEqual(want[i].Metrics, got[i].Metrics) {
			t.Fatalf("group %q: got metadata %v metrics %v, want %v %v", want[i].ID,
				got[i].Metadata, got[i].Metrics, want[i].Metadata, want[i].Metrics)
		}
		for j := range want[i].Trajectories {
			w, g := want[i].Trajectories[j], got[i].Trajectories[j]
			if !reflect.DeepEqual(w, g) {
				wv, gv := reflect.ValueOf(w), reflect.ValueOf(g)
				for k := range wv.NumField() {
					if !reflect.DeepEqual(wv.Field(k).Interface(), gv.Field(k).Interface()) {
						t.Errorf("group %q trajectory %d field %s:\n got  %#v\n want %#v", want[i].ID, j,
							wv.Type().Field(k).Name, gv.Field(k).Interface(), wv.Field(k).Interface())
					}
				}
				t.FailNow()
			}
		}
	}
}

func TestRoundTripEveryField(t *testing.T) {
	groups := sampleGroups(1, 6, 4)
	// One very long message (1 MB of multi-byte text).
	long := strings.Repeat("héllo wörld ", (1<<20)/14)
	groups[1].Trajectories[0].Messages[1].Content = long
	groups[1].Trajectories[0].Messages[1].ContentParts = ""
	// Empty, non-nil lists come back nil: the format does not tell them apart.
	path := writeTemp(t, "rt.parquet", groups, WriterOptions{RowGroupBytes: 64 << 10, Metadata: map[string]string{"hone.run": "x"}})
	got, err := ReadFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	diffGroups(t, groups, got)

	r, err := Open(context.Background(), fileset.Files(path))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	info := r.Files()[0]
	if info.SchemaVersion != SchemaVersion || info.Metadata["hone.run"] != "x" || info.Rows != 24 {
		t.Errorf("file info %+v", info)
	}
	if info.RowGroups < 2 {
		t.Errorf("want several row groups at a 64 KiB threshold, got %d", info.RowGroups)
	}
}

// TestGroupsNeverSplitAcrossRowGroups reads the file with parquet-go
// directly and checks that each group id lives in exactly one row group.
func TestGroupsNeverSplitAcrossRowGroups(t *testing.T) {
	groups := sampleGroups(2, 40, 3)
	for _, limit := range []int64{1, 2000, 5000, 1 << 30} {
		t.Run(fmt.Sprintf("RowGroupBytes=%d", limit), func(t *testing.T) {
			path := writeTemp(t, "rg.parquet", groups, WriterOptions{RowGroupBytes: limit})
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			st, _ := f.Stat()
			pf, err := parquet.OpenFile(f, st.Size())
			if err != nil {
				t.Fatal(err)
			}
			owner := map[string]int{}
			for i, rg := range pf.RowGroups() {
				rr := parquet.NewGenericRowGroupReader[row](rg)
				rows := make([]row, rg.NumRows())
				if n, err := rr.Read(rows); n != len(rows) && err != nil {
					t.Fatal(err)
				}
				for _, r := range rows {
					if o, ok := owner[r.GroupID]; ok && o != i {
						t.Fatalf("group %q in row groups %d and %d", r.GroupID, o, i)
					}
					owner[r.GroupID] = i
				}
			}
			switch {
			case limit == 1 && len(pf.RowGroups()) != len(groups):
				t.Errorf("limit 1: %d row groups, want one per group (%d)", len(pf.RowGroups()), len(groups))
			case limit == 1<<30 && len(pf.RowGroups()) != 1:
				t.Errorf("large limit: %d row groups, want 1", len(pf.RowGroups()))
			}
		})
	}
}

func TestRewardNullVersusZero(t *testing.T) {
	g := Group{ID: "g", Trajectories: []Trajectory{
		{ID: "null"}, {ID: "zero", Reward: Float64(0)}, {ID: "negzero", Reward: Float64(-0.0)}, {ID: "one", Reward: Float64(1)},
	}}
	path := writeTemp(t, "r.parquet", []Group{g}, WriterOptions{})
	got, err := ReadFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	tr := got[0].Trajectories
	if tr[0].Reward != nil {
		t.Errorf("null reward came back as %v", *tr[0].Reward)
	}
	for i, want := range []float64{0, 0, 1} {
		if tr[i+1].Reward == nil || *tr[i+1].Reward != want {
			t.Errorf("%s: reward %v, want %v", tr[i+1].ID, tr[i+1].Reward, want)
		}
	}
	// The column itself must be nullable with one null, for SQL readers.
	f, _ := os.Open(path)
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	leaf, ok := pf.Schema().Lookup("reward")
	if !ok || !leaf.Node.Optional() {
		t.Fatalf("reward column missing or not optional")
	}
	if nulls := pf.Metadata().RowGroups[0].Columns[leaf.ColumnIndex].MetaData.Statistics.NullCount; nulls != 1 {
		t.Errorf("reward null count %d, want 1", nulls)
	}
}

func TestWriterDeterministic(t *testing.T) {
	groups := sampleGroups(3, 5, 3)
	var a, b bytes.Buffer
	for _, buf := range []*bytes.Buffer{&a, &b} {
		w := NewWriter(buf, WriterOptions{})
		for _, g := range groups {
			if err := w.WriteGroup(context.Background(), g); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Errorf("two writes of the same groups differ (%d vs %d bytes)", a.Len(), b.Len())
	}
}

func TestWriterRejects(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		groups []Group
		want   string
	}{
		{"empty group id", []Group{{Trajectories: []Trajectory{{ID: "a"}}}}, "empty group id"},
		{"group id mismatch", []Group{{ID: "g", Trajectories: []Trajectory{{ID: "a", GroupID: "h"}}}}, `group_id is "h"`},
		{"duplicate id in group", []Group{{ID: "g", Trajectories: []Trajectory{{ID: "a"}, {ID: "a"}}}}, `"a" twice`},
		{"duplicate id across groups", []Group{{ID: "g", Trajectories: []Trajectory{{ID: "a"}}}, {ID: "h", Trajectories: []Trajectory{{ID: "a"}}}}, "already written"},
		{"group twice", []Group{{ID: "g", Trajectories: []Trajectory{{ID: "a"}}}, {ID: "g", Trajectories: []Trajectory{{ID: "b"}}}}, "group already written"},
		{"empty group", []Group{{ID: "g"}}, "no trajectories"},
		{"empty trajectory id", []Group{{ID: "g", Trajectories: []Trajectory{{}}}}, "trajectory_id: empty"},
		{"bad split", []Group{{ID: "g", Trajectories: []Trajectory{{ID: "a", Split: "dev"}}}}, "split"},
		{"bad payload", []Group{{ID: "g", Trajectories: []Trajectory{{ID: "a", Payload: "{"}}}}, "payload"},
		{"logprobs length", []Group{{ID: "g", Trajectories: []Trajectory{{ID: "a", Messages: []Message{{Role: "assistant", TokenIDs: []int32{1, 2}, Logprobs: []float32{-1}}}}}}}, "messages[0].logprobs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := NewWriter(io.Discard, WriterOptions{})
			var err error
			for _, g := range c.groups {
				if err = w.WriteGroup(ctx, g); err != nil {
					break
				}
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want it to mention %q", err, c.want)
			}
		})
	}
	// A failed write must not leave a file behind.
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.parquet")
	if err := WriteFile(ctx, path, cases[0].groups, WriterOptions{}); err == nil {
		t.Fatal("WriteFile accepted a group without id")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("WriteFile left %v behind", ents)
	}
}

// TestTimestampsOutsideNanosecondRange: a file stores timestamps as int64
// nanoseconds since 1970, which hold 1677-09-21 to 2262-04-11. A time
// outside that (a typo'd year in a JSONL line, say) is refused naming the
// field, by Validate, the Writer and the JSONL import; the Writer took it
// and stored an overflowed number, so the year 3000 read back as 1830.
// The zero time (not recorded) and the range's ends still round-trip.
func TestTimestampsOutsideNanosecondRange(t *testing.T) {
	ctx := context.Background()
	lo, hi := time.Unix(0, math.MinInt64).UTC(), time.Unix(0, math.MaxInt64).UTC()
	for _, c := range []struct {
		field string
		set   func(*Trajectory)
	}{
		{"created_at", func(tr *Trajectory) { tr.CreatedAt = time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"started_at", func(tr *Trajectory) { tr.StartedAt = lo.Add(-time.Nanosecond) }},
		{"finished_at", func(tr *Trajectory) { tr.FinishedAt = hi.Add(time.Nanosecond) }},
	} {
		tr := Trajectory{ID: "a", GroupID: "g"}
		c.set(&tr)
		err := tr.Validate()
		var ie *InputError
		if !errors.As(err, &ie) || ie.Field != c.field {
			t.Errorf("%s: Validate %v", c.field, err)
		}
		if err := NewWriter(io.Discard, WriterOptions{}).WriteGroup(ctx, Group{ID: "g", Trajectories: []Trajectory{tr}}); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: WriteGroup %v", c.field, err)
		}
	}
	_, _, err := ImportJSONL(ctx, strings.NewReader(`{"messages":[],"created_at":"3000-01-01T00:00:00Z"}`), "y.jsonl")
	var ie *InputError
	if !errors.As(err, &ie) || ie.File != "y.jsonl" || ie.Row != 1 || ie.Field != "created_at" {
		t.Errorf("import: %v", err)
	}

	in := []Group{{ID: "g", Trajectories: []Trajectory{{ID: "a", GroupID: "g", StartedAt: lo, FinishedAt: hi}}}}
	got, err := ReadFile(ctx, writeTemp(t, "ends.parquet", in, WriterOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	diffGroups(t, in, got)
}

// Strings that are not UTF-8 (a program's stderr cut mid-character, a
// Latin-1 error body) are written with U+FFFD, so DuckDB and pyarrow can
// read the file; ids, which identify rows, are refused instead. The
// caller's group is not modified.
func TestWriterInvalidUTF8(t *testing.T) {
	ctx := context.Background()
	bad := "caf\xe9 \xc3"
	g := Group{ID: "g", Metadata: map[string]string{"k" + bad: bad}, Metrics: map[string]float64{bad: 1},
		Trajectories: []Trajectory{{ID: "t", Error: bad, Logs: []string{"ok", bad}, Metadata: map[string]string{"m": bad},
			Metrics:          map[string]float64{"x" + bad: 2},
			RewardComponents: []RewardComponent{{Name: "r" + bad, Value: 1, Explanation: bad}},
			Messages: []Message{{Role: "user", Content: bad, ReasoningContent: bad, Name: bad,
				ToolCalls: []ToolCall{{ID: "c", Type: "function", Name: "f" + bad, Arguments: bad}}}},
			Tools:               []Tool{{Type: "function", Name: "f", Description: bad}},
			AdditionalHistories: []History{{Messages: []Message{{Role: "user", Content: bad}}}}}}}
	path := filepath.Join(t.TempDir(), "u.parquet")
	if err := WriteFile(ctx, path, []Group{g}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	if g.Trajectories[0].Logs[1] != bad || g.Metadata["k"+bad] != bad || g.Trajectories[0].Metadata["m"] != bad {
		t.Fatal("the caller's group was modified")
	}
	got, err := ReadFile(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	const fixed = "caf\uFFFD \uFFFD"
	tr := got[0].Trajectories[0]
	m, h := tr.Messages[0], tr.AdditionalHistories[0].Messages[0]
	for name, s := range map[string]string{
		"error": tr.Error, "logs[1]": tr.Logs[1], "metadata": tr.Metadata["m"], "group metadata": got[0].Metadata["k"+fixed],
		"component name": tr.RewardComponents[0].Name[1:], "component explanation": tr.RewardComponents[0].Explanation,
		"content": m.Content, "reasoning": m.ReasoningContent, "name": m.Name, "tool call name": m.ToolCalls[0].Name[1:],
		"arguments": m.ToolCalls[0].Arguments, "tool description": tr.Tools[0].Description, "history content": h.Content,
	} {
		if s != fixed {
			t.Errorf("%s: %q, want %q", name, s, fixed)
		}
	}
	if tr.Logs[0] != "ok" || got[0].Metrics[fixed] != 1 || tr.Metrics["x"+fixed] != 2 {
		t.Errorf("logs %q, group metrics %v, metrics %v", tr.Logs, got[0].Metrics, tr.Metrics)
	}
	for _, g := range []Group{{ID: "g" + bad, Trajectories: []Trajectory{{ID: "t"}}}, {ID: "g", Trajectories: []Trajectory{{ID: "t" + bad}}}} {
		err := WriteFile(ctx, path, []Group{g}, WriterOptions{})
		if err == nil || !strings.Contains(err.Error(), "not valid UTF-8") {
			t.Errorf("group %q, trajectory %q: %v, want an error saying not valid UTF-8", g.ID, g.Trajectories[0].ID, err)
		}
	}
}

// Keys that become one key once their stray bytes are U+FFFD keep the
// value of the last in key order, as utf8.go says, on every write: the
// map's iteration order picked one at random, so writing the same group
// twice could give two files that differ.
func TestWriterInvalidUTF8KeysCollideInOrder(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "k.parquet")
	for range 32 {
		g := Group{ID: "g", Metadata: map[string]string{"k\xfe": "first", "k\xff": "last"},
			Trajectories: []Trajectory{{ID: "t", Metrics: map[string]float64{"m\xfe": 1, "m\xff": 2}}}}
		if err := WriteFile(ctx, path, []Group{g}, WriterOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if m, v := got[0].Metadata["k\uFFFD"], got[0].Trajectories[0].Metrics["m\uFFFD"]; m != "last" || v != 2 {
			t.Fatalf("metadata %q, metric %v; want the last key's, \"last\" and 2", m, v)
		}
	}
}

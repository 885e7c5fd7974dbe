package trajectory

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/parquet-go/parquet-go"
)

// TestReadV1Fixture reads the version 1 file written by the last version 1
// writer (testdata/v1/README.md), and the JSONL it exported of the same
// groups, and checks that both read to the same groups with the version 2
// fields empty.
func TestReadV1Fixture(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join("testdata", "v1", "v1.parquet")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	for _, col := range []string{"additional_histories", "logs", "group_metadata", "group_metrics"} {
		if _, ok := pf.Schema().Lookup(col); ok {
			t.Fatalf("fixture has column %s; it should predate version 2", col)
		}
	}
	f.Close()

	r, err := Open(ctx, fileset.Files(path))
	if err != nil {
		t.Fatal(err)
	}
	if info := r.Files()[0]; info.SchemaVersion != 1 || info.Metadata["hone.run"] != "v1-fixture" {
		t.Errorf("file info %+v, want schema version 1", info)
	}
	r.Close()
	got, err := ReadFile(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	jf, err := os.Open(filepath.Join("testdata", "v1", "v1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer jf.Close()
	want, _, err := ImportJSONL(ctx, jf, "v1.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || len(got[0].Trajectories) != 3 || len(got[0].Trajectories[0].Messages) == 0 {
		t.Fatalf("fixture read as %d groups", len(got))
	}
	diffGroups(t, want, got)
	for _, g := range got {
		if g.Metadata != nil || g.Metrics != nil {
			t.Errorf("group %q: version 1 file gave group fields %v %v", g.ID, g.Metadata, g.Metrics)
		}
		for _, tr := range g.Trajectories {
			if tr.AdditionalHistories != nil || tr.Logs != nil {
				t.Errorf("trajectory %q: version 1 file gave histories or logs", tr.ID)
			}
		}
	}

	// Rewritten by this build, the same groups come back as version 2.
	out := writeTemp(t, "v2.parquet", got, WriterOptions{})
	r, err = Open(ctx, fileset.Files(out))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if v := r.Files()[0]; v.SchemaVersion != 2 || v.Metadata[MetadataKeySchemaVersion] != "2" {
		t.Errorf("rewritten file info %+v, want schema version 2", v)
	}
	again, err := ReadFile(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	diffGroups(t, want, again)
}

func TestSchemaV2Columns(t *testing.T) {
	for _, path := range [][]string{
		{"additional_histories", "list", "element", "messages", "list", "element", "token_ids", "list", "element"},
		{"additional_histories", "list", "element", "tools", "list", "element", "name"},
		{"logs", "list", "element"},
		{"group_metadata", "key_value", "value"},
		{"group_metrics", "key_value", "value"},
	} {
		if _, ok := Schema().Lookup(path...); !ok {
			t.Errorf("Schema() lacks %s", strings.Join(path, "."))
		}
	}
}

// TestGroupFieldsMustAgree writes a group whose rows disagree on the
// group's own fields; the reader names the file, row, group and field.
func TestGroupFieldsMustAgree(t *testing.T) {
	g := sampleGroups(21, 1, 3)[0]
	for _, field := range []string{"group_metadata", "group_metrics"} {
		t.Run(field, func(t *testing.T) {
			rows := make([]row, len(g.Trajectories))
			for i := range g.Trajectories {
				rows[i] = toRow(&g.Trajectories[i])
				rows[i].GroupMetadata, rows[i].GroupMetrics = g.Metadata, g.Metrics
			}
			if field == "group_metadata" {
				rows[2].GroupMetadata = map[string]string{"scenario": "other"}
			} else {
				rows[2].GroupMetrics = nil
			}
			path := filepath.Join(t.TempDir(), "disagree.parquet")
			writeRaw(t, path, rows, MetadataKeySchemaVersion, strconv.Itoa(SchemaVersion))
			err := readErr(t, path)
			var ie *InputError
			if !errors.As(err, &ie) || ie.File != path || ie.Row != 2 || ie.Group != g.ID || ie.Field != field {
				t.Fatalf("error %v (%+v), want an *InputError at %s row 2, group %q, field %s", err, ie, path, g.ID, field)
			}
			mustContain(t, err, path, "row 2", field, "first row (row 0)")
		})
	}
}

// TestHistoryErrorsNameTheField checks that a bad message inside an
// additional history is named by its full path, in Validate, in a file and
// in a JSONL line.
func TestHistoryErrorsNameTheField(t *testing.T) {
	g := sampleGroups(22, 1, 1)[0]
	g.Trajectories[0].AdditionalHistories[1].Messages[0].Role = ""
	const field = "additional_histories[1].messages[0].role"
	var ie *InputError
	if err := g.Trajectories[0].Validate(); !errors.As(err, &ie) || ie.Field != field {
		t.Fatalf("Validate: %v, want an *InputError on %s", err, field)
	}
	path := filepath.Join(t.TempDir(), "bad.parquet")
	writeRaw(t, path, []row{toRow(&g.Trajectories[0])})
	err := readErr(t, path)
	if !errors.As(err, &ie) || ie.File != path || ie.Row != 0 || ie.Field != field {
		t.Fatalf("read: %v, want an *InputError at %s row 0 on %s", err, path, field)
	}
	if err := WriteFile(context.Background(), filepath.Join(t.TempDir(), "w.parquet"), []Group{g}, WriterOptions{}); err == nil || !strings.Contains(err.Error(), field) {
		t.Errorf("write: %v, want an error naming %s", err, field)
	}

	for name, c := range map[string]struct{ in, want, field string }{
		"no role":      {"{\"messages\":[]}\n{\"messages\":[],\"additional_histories\":[{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"content\":\"x\"}]}]}", "h.jsonl:2: additional_histories[0].messages[1]: no role", ""},
		"tool no name": {`{"messages":[],"additional_histories":[{"messages":[],"tools":[{"type":"function","function":{}}]}]}`, "h.jsonl:1: additional_histories[0].tools[0]: no function name", ""},
		"both":         {`{"messages":[],"additional_histories":[{"messages":[],"messages_and_choices":[]}]}`, `additional_histories[0]: both "messages" and "messages_and_choices"`, ""},
		"logprobs":     {`{"messages":[],"additional_histories":[{"messages":[{"role":"assistant","content":"a","token_ids":[1,2],"logprobs":[-1]}]}]}`, "h.jsonl:1 (group", "additional_histories[0].messages[0].logprobs"},
		"group metadata disagrees": {"{\"messages\":[],\"group_id\":\"G\",\"group_metadata\":{\"a\":\"1\"}}\n{\"messages\":[],\"group_id\":\"G\",\"group_metadata\":{\"a\":\"2\"}}",
			"h.jsonl:2 (group \"G\"", "group_metadata"},
		"group metrics disagree": {"{\"messages\":[],\"group_id\":\"G\",\"group_metrics\":{\"a\":1}}\n{\"messages\":[],\"group_id\":\"G\",\"group_metrics\":{\"a\":2}}",
			"group_metrics map[a:2] differs", "group_metrics"},
		"logs not strings": {`{"messages":[],"logs":[1]}`, "h.jsonl:1", ""},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := ImportJSONL(context.Background(), strings.NewReader(c.in), "h.jsonl")
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &ie) || ie.File != "h.jsonl" {
				t.Fatalf("error %v, want an *InputError mentioning %q", err, c.want)
			}
			if c.field != "" && ie.Field != c.field {
				t.Errorf("field %q, want %q", ie.Field, c.field)
			}
		})
	}
}

// TestJSONLShapeV2 checks the JSON keys the version 2 fields are written
// under, that group fields given on one line of a group apply to the whole
// group, and that ART's history shape reads.
func TestJSONLShapeV2(t *testing.T) {
	ctx := context.Background()
	groups := sampleGroups(23, 2, 2)
	var buf strings.Builder
	if err := ExportJSONL(&buf, groups...); err != nil {
		t.Fatal(err)
	}
	first := strings.SplitN(buf.String(), "\n", 2)[0]
	var line struct {
		AdditionalHistories []struct {
			Messages []map[string]any `json:"messages"`
			Tools    []map[string]any `json:"tools"`
		} `json:"additional_histories"`
		Logs          []string           `json:"logs"`
		GroupMetadata map[string]string  `json:"group_metadata"`
		GroupMetrics  map[string]float64 `json:"group_metrics"`
	}
	if err := json.Unmarshal([]byte(first), &line); err != nil {
		t.Fatal(err)
	}
	h := line.AdditionalHistories
	if len(h) != 2 || h[0].Messages[2]["content"] != "short" || h[0].Messages[2]["trainable"] != true ||
		h[1].Tools[0]["function"].(map[string]any)["name"] != "look" {
		t.Errorf("additional_histories in JSONL: %s", first)
	}
	if !slices.Equal(line.Logs, groups[0].Trajectories[0].Logs) || line.GroupMetadata["scenario"] != "s-0" || len(line.GroupMetrics) != 2 {
		t.Errorf("logs %q, group_metadata %v, group_metrics %v", line.Logs, line.GroupMetadata, line.GroupMetrics)
	}

	// Group fields on the first line only; ART's messages_and_choices in a history.
	in := `{"messages":[{"role":"user","content":"q"}],"group_id":"G","group_metadata":{"k":"v"},"group_metrics":{"n":2},"additional_histories":[{"messages_and_choices":[{"role":"user","content":"sub"},{"finish_reason":"stop","message":{"role":"assistant","content":"ok"},"logprobs":{"content":[{"token":"token_id:7","logprob":-0.5}]}}]}]}
{"messages":[{"role":"user","content":"q"}],"group_id":"G"}
`
	got, _, err := ImportJSONL(ctx, strings.NewReader(in), "art.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Metadata["k"] != "v" || got[0].Metrics["n"] != 2 || len(got[0].Trajectories) != 2 {
		t.Fatalf("groups %+v", got)
	}
	c := got[0].Trajectories[0].AdditionalHistories[0].Messages[1]
	if !c.Trainable || c.Content != "ok" || !slices.Equal(c.TokenIDs, []int32{7}) || !slices.Equal(c.Logprobs, []float32{-0.5}) {
		t.Errorf("choice in a history: %+v", c)
	}
}

package trajectory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hone-rl/hone/format/fileset"
)

// needTool skips a test outside CI and fails it under CI=true.
func needTool(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set but %s", msg)
	}
	t.Skip(msg)
}

func repoRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// duckSummary mirrors the JSON that testdata/duckdb/query.mjs prints. DuckDB
// gives big integers as strings, doubles as numbers, and NULL as null.
type duckSummary struct {
	Step         any     `json:"step"`
	Adapter      *string `json:"adapter"`
	Env          *string `json:"env"`
	Trajectories any     `json:"trajectories"`
	Groups       any     `json:"groups"`
	Scored       any     `json:"scored"`
	RewardMean   any     `json:"reward_mean"`
	RewardStd    any     `json:"reward_std"`
	RewardMin    any     `json:"reward_min"`
	RewardMax    any     `json:"reward_max"`
	Errors       any     `json:"errors"`
	Tokens       any     `json:"tokens"`
}

func num(t *testing.T, v any) float64 {
	t.Helper()
	switch x := v.(type) {
	case nil:
		return 0 // SQL NULL: our Summary reports 0 for an empty aggregate
	case float64:
		return x
	case string:
		f, err := strconv.ParseFloat(x, 64)
		if err != nil {
			t.Fatalf("DuckDB value %q: %v", x, err)
		}
		return f
	}
	t.Fatalf("DuckDB value %#v of type %T", v, v)
	return 0
}

func closeEnough(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func compareSummary(t *testing.T, what string, d duckSummary, s Summary) {
	t.Helper()
	check := func(field string, duck any, ours float64) {
		t.Helper()
		if got := num(t, duck); !closeEnough(got, ours) {
			t.Errorf("%s %s: DuckDB %v, Stats %v", what, field, got, ours)
		}
	}
	check("trajectories", d.Trajectories, float64(s.Trajectories))
	check("groups", d.Groups, float64(s.Groups))
	check("scored", d.Scored, float64(s.Reward.Scored))
	check("avg(reward)", d.RewardMean, s.Reward.Mean)
	check("stddev_samp(reward)", d.RewardStd, s.Reward.Std)
	check("min(reward)", d.RewardMin, s.Reward.Min)
	check("max(reward)", d.RewardMax, s.Reward.Max)
	check("errors", d.Errors, float64(s.Errors))
	check("tokens", d.Tokens, float64(s.Tokens))
}

// duckQuery runs testdata/duckdb/query.mjs with args, skipping or failing
// (under CI) when node or the npm package is missing.
func duckQuery(t *testing.T, args ...string) []byte {
	t.Helper()
	root := repoRoot(t)
	node, err := exec.LookPath("node")
	if err != nil {
		needTool(t, "node is not installed")
	}
	if _, err := os.Stat(filepath.Join(root, "testdata/duckdb/node_modules/@duckdb/node-api")); err != nil {
		needTool(t, "run `npm ci` in testdata/duckdb")
	}
	cmd := exec.Command(node, append([]string{filepath.Join(root, "testdata/duckdb/query.mjs")}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("query.mjs %v: %v\n%s", args, err, ee.Stderr)
		}
		t.Fatal(err)
	}
	return out
}

// TestReadFileWrittenByDuckDB has DuckDB copy one of our files to a new
// Parquet file of its own making (its own list, map and timestamp
// encodings, no hone metadata) and reads that back, the version 2 columns
// (additional histories, logs, group fields) included.
func TestReadFileWrittenByDuckDB(t *testing.T) {
	groups := sampleGroups(12, 5, 4)
	path := writeTemp(t, "ours.parquet", groups, WriterOptions{})
	copied := filepath.Join(t.TempDir(), "duck.parquet")
	duckQuery(t, path, "COPY (SELECT * FROM t) TO '"+copied+"' (FORMAT parquet)")
	got, err := ReadFile(context.Background(), copied)
	if err != nil {
		t.Fatal(err)
	}
	// DuckDB keeps timestamps to the microsecond.
	for _, g := range groups {
		for i := range g.Trajectories {
			tr := &g.Trajectories[i]
			tr.CreatedAt = tr.CreatedAt.Truncate(time.Microsecond)
			tr.StartedAt = tr.StartedAt.Truncate(time.Microsecond)
			tr.FinishedAt = tr.FinishedAt.Truncate(time.Microsecond)
		}
	}
	diffGroups(t, groups, got)
}

// TestDuckDBAgreesWithStats writes a file with several steps and rewards,
// null ones among them, served by two runs' adapters, a base model and
// nothing named, and checks DuckDB's aggregates against Stats: per step
// number, per adapter and step (in the order Stats gives: by run, then
// step as a number, the one in the adapter's name first), and per
// environment.
func TestDuckDBAgreesWithStats(t *testing.T) {
	groups := sampleGroups(11, 30, 4)
	for i := range groups {
		// Both runs have a step 1, 2 and 10: by_step adds them up.
		step := []int64{1, 2, 10}[i/4%3]
		adapter := []string{"rl@" + strconv.FormatInt(step, 10), "warmup@" + strconv.FormatInt(step, 10), "qwen3", ""}[i%4]
		if i%4 == 2 {
			step = 0
		}
		for j := range groups[i].Trajectories {
			tr := &groups[i].Trajectories[j]
			tr.Adapter = adapter
			if i%4 != 3 {
				tr.Step = step
			}
		}
	}
	// Rows whose step disagrees with their adapter's (imported with step
	// 0): both order them by the step in the name, after rl@2.
	for i := range groups[24].Trajectories {
		groups[24].Trajectories[i].Adapter, groups[24].Trajectories[i].Step = "rl@10", 0
	}
	// A step where nothing is scored: DuckDB's avg is NULL, ours 0.
	for i := range groups[29].Trajectories {
		groups[29].Trajectories[i].Step = 9
		groups[29].Trajectories[i].Adapter = ""
		groups[29].Trajectories[i].Reward = nil
	}
	path := writeTemp(t, "duck.parquet", groups, WriterOptions{RowGroupBytes: 8 << 10})
	ctx := context.Background()
	r, err := Open(ctx, fileset.Files(path))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	stats, err := ComputeStats(ctx, r)
	if err != nil {
		t.Fatal(err)
	}

	out := duckQuery(t, path)
	var duck struct {
		Total         duckSummary   `json:"total"`
		ByStep        []duckSummary `json:"by_step"`
		ByAdapter     []duckSummary `json:"by_adapter"`
		ByEnv         []duckSummary `json:"by_env"`
		SchemaVersion string        `json:"schema_version"`
	}
	if err := json.Unmarshal(out, &duck); err != nil {
		t.Fatalf("query.mjs output %s: %v", out, err)
	}
	if duck.SchemaVersion != strconv.Itoa(SchemaVersion) {
		t.Errorf("DuckDB sees schema version %q", duck.SchemaVersion)
	}
	compareSummary(t, "total", duck.Total, stats.Summary)
	// Steps 0 (qwen3 and ""), 1, 2, 9 (the unscored one) and 10.
	if len(duck.ByStep) != len(stats.ByStep) || len(stats.ByStep) != 5 {
		t.Fatalf("DuckDB has %d steps, Stats %d, want 5", len(duck.ByStep), len(stats.ByStep))
	}
	for i, s := range stats.ByStep {
		if num(t, duck.ByStep[i].Step) != float64(s.Step) {
			t.Fatalf("step %d: DuckDB has step %v", s.Step, duck.ByStep[i].Step)
		}
		compareSummary(t, fmt.Sprintf("step %d", s.Step), duck.ByStep[i], s.Summary)
	}
	if stats.ByStep[3].Step != 9 || stats.ByStep[3].Reward.Scored != 0 || duck.ByStep[3].RewardMean != nil {
		t.Errorf("unscored step: Stats step %d scored %d, DuckDB avg %v", stats.ByStep[3].Step, stats.ByStep[3].Reward.Scored, duck.ByStep[3].RewardMean)
	}
	// "" at steps 0, 1, 2 and 9; qwen3; rl and warmup at steps 1, 2, 10;
	// rl@10 at step 0.
	if len(duck.ByAdapter) != len(stats.ByAdapter) || len(stats.ByAdapter) != 12 {
		t.Fatalf("DuckDB has %d adapters and steps, Stats %d, want 12", len(duck.ByAdapter), len(stats.ByAdapter))
	}
	for i, s := range stats.ByAdapter {
		d := duck.ByAdapter[i]
		if d.Adapter == nil || *d.Adapter != s.Adapter || num(t, d.Step) != float64(s.Step) {
			t.Fatalf("adapter %d: Stats %q step %d, DuckDB %v step %v", i, s.Adapter, s.Step, d.Adapter, d.Step)
		}
		compareSummary(t, fmt.Sprintf("adapter %q step %d", s.Adapter, s.Step), d, s.Summary)
	}
	if len(duck.ByEnv) != len(stats.ByEnv) {
		t.Fatalf("DuckDB has %d envs, Stats %d", len(duck.ByEnv), len(stats.ByEnv))
	}
	for i, e := range stats.ByEnv {
		if d := duck.ByEnv[i].Env; d == nil || *d != e.Env {
			t.Fatalf("env %d: DuckDB %v, Stats %q", i, d, e.Env)
		}
		compareSummary(t, "env "+e.Env, duck.ByEnv[i], e.Summary)
	}
}

// TestDuckDBReadsV2Columns has DuckDB query the version 2 columns
// (additional_histories with their messages and token ids, logs, the
// group's metadata and metrics) and compares its answers with the groups
// written.
func TestDuckDBReadsV2Columns(t *testing.T) {
	groups := sampleGroups(24, 4, 3)
	path := writeTemp(t, "v2.parquet", groups, WriterOptions{})
	out := duckQuery(t, path, `SELECT trajectory_id,
  len(additional_histories) AS histories,
  list_transform(additional_histories, h -> len(h.messages)) AS history_messages,
  coalesce(list_sum(list_transform(additional_histories,
    h -> coalesce(list_sum(list_transform(h.messages, m -> len(m.token_ids))), 0))), 0) AS history_tokens,
  list_transform(additional_histories, h -> list_transform(h.tools, x -> x.name)) AS history_tools,
  logs, group_metadata, group_metrics
FROM t ORDER BY trajectory_id`)
	type kv struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	}
	var rows []struct {
		ID              string     `json:"trajectory_id"`
		Histories       any        `json:"histories"`
		HistoryMessages []any      `json:"history_messages"`
		HistoryTokens   any        `json:"history_tokens"`
		HistoryTools    [][]string `json:"history_tools"`
		Logs            []string   `json:"logs"`
		GroupMetadata   []kv       `json:"group_metadata"`
		GroupMetrics    []kv       `json:"group_metrics"`
	}
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("query.mjs output %s: %v", out, err)
	}
	byID := map[string]int{}
	for i, r := range rows {
		byID[r.ID] = i
	}
	if len(rows) != 12 || len(byID) != 12 {
		t.Fatalf("DuckDB returned %d rows, want 12", len(rows))
	}
	for _, g := range groups {
		for _, tr := range g.Trajectories {
			r := rows[byID[tr.ID]]
			var tokens int
			for k, h := range tr.AdditionalHistories {
				if num(t, r.HistoryMessages[k]) != float64(len(h.Messages)) {
					t.Errorf("%s: history %d has %v messages in DuckDB, %d written", tr.ID, k, r.HistoryMessages[k], len(h.Messages))
				}
				var names []string
				for _, tool := range h.Tools {
					names = append(names, tool.Name)
				}
				if fmt.Sprint(r.HistoryTools[k]) != fmt.Sprint(names) {
					t.Errorf("%s: history %d tools %v in DuckDB, %v written", tr.ID, k, r.HistoryTools[k], names)
				}
				for _, m := range h.Messages {
					tokens += len(m.TokenIDs)
				}
			}
			if num(t, r.Histories) != float64(len(tr.AdditionalHistories)) || num(t, r.HistoryTokens) != float64(tokens) {
				t.Errorf("%s: DuckDB %v histories with %v tokens, written %d with %d", tr.ID, r.Histories, r.HistoryTokens, len(tr.AdditionalHistories), tokens)
			}
			if fmt.Sprint(r.Logs) != fmt.Sprint(tr.Logs) {
				t.Errorf("%s: logs %q in DuckDB, %q written", tr.ID, r.Logs, tr.Logs)
			}
			meta := map[string]string{}
			for _, e := range r.GroupMetadata {
				meta[e.Key] = e.Value.(string)
			}
			metrics := map[string]float64{}
			for _, e := range r.GroupMetrics {
				metrics[e.Key] = num(t, e.Value)
			}
			if len(meta) != len(g.Metadata) || len(metrics) != len(g.Metrics) {
				t.Errorf("%s: group fields %v %v in DuckDB, %v %v written", tr.ID, meta, metrics, g.Metadata, g.Metrics)
			}
			for k, v := range g.Metadata {
				if meta[k] != v {
					t.Errorf("%s: group_metadata[%q] = %q in DuckDB, %q written", tr.ID, k, meta[k], v)
				}
			}
			for k, v := range g.Metrics {
				if !closeEnough(metrics[k], v) {
					t.Errorf("%s: group_metrics[%q] = %v in DuckDB, %v written", tr.ID, k, metrics[k], v)
				}
			}
		}
	}
}

// TestImportInvalidUTF8 imports a line with bytes that are not UTF-8 in a
// string field and in the values kept as JSON text (payload, content
// parts, tool parameters, a key Hone does not know). encoding/json
// replaces such bytes with U+FFFD in strings it decodes, but the values
// kept as text kept them, and DuckDB refused the file ("value ... is not
// valid UTF8"); every field now holds U+FFFD for each such byte, the file
// reads in DuckDB, and export and import give the same trajectory again.
func TestImportInvalidUTF8(t *testing.T) {
	ctx := context.Background()
	line := "{\"messages\":[{\"role\":\"user\",\"content\":\"a\xff\xfeb\"},{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"p\xffq\"}]}]," +
		"\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"description\":\"d\xc3\"}}}]," +
		"\"payload\":{\"k\":\"x\xffy\"},\"extra\":\"\xfe\"}\n"
	groups, _, err := ImportJSONL(ctx, strings.NewReader(line), "u.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	tr := groups[0].Trajectories[0]
	for name, s := range map[string]string{"content": tr.Messages[0].Content, "content_parts": tr.Messages[1].ContentParts,
		"parameters": tr.Tools[0].Parameters, "payload": tr.Payload, "metadata": tr.Metadata["jsonl.extra"]} {
		if !utf8.ValidString(s) || !strings.Contains(s, "\uFFFD") {
			t.Errorf("%s %q: want U+FFFD for the bytes that are not UTF-8", name, s)
		}
	}
	if tr.Messages[0].Content != "a\uFFFD\uFFFDb" || tr.Payload != `{"k":"x`+"\uFFFD"+`y"}` {
		t.Errorf("content %q, payload %q: want one U+FFFD a byte, as encoding/json gives", tr.Messages[0].Content, tr.Payload)
	}
	var buf bytes.Buffer
	if err := ExportJSONL(&buf, groups...); err != nil {
		t.Fatal(err)
	}
	again, _, err := ImportJSONL(ctx, &buf, "again.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	diffGroups(t, groups, again)

	path := writeTemp(t, "u.parquet", groups, WriterOptions{})
	out := duckQuery(t, path, "SELECT payload, messages[1].content AS content FROM t")
	var rows []struct{ Payload, Content string }
	if err := json.Unmarshal(out, &rows); err != nil || len(rows) != 1 || rows[0].Payload != tr.Payload || rows[0].Content != tr.Messages[0].Content {
		t.Errorf("DuckDB read %s (%v)", out, err)
	}
}

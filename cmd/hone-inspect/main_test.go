package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/cmd/internal/testbin"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/parquet-go/parquet-go"
)

// The tests run the real binary, built once into a temporary directory
// (binDir), beside the stages the log-eval loop test runs with it.
var binary, binDir string

func TestMain(m *testing.M) {
	testbin.Main(m, func(dir string) { binary, binDir = filepath.Join(dir, "hone-inspect"), dir },
		".", "../hone-train", "../hone-serve", "../hone-collect")
}

type result struct {
	code           int
	stdout, stderr string
}

// run runs the binary with stdin (may be nil) and returns its exit code and
// output. stdout is a pipe, so not a terminal.
func run(t *testing.T, stdin []byte, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run %q: %v", args, err)
	}
	return res
}

func mustRun(t *testing.T, stdin []byte, args ...string) result {
	t.Helper()
	r := run(t, stdin, args...)
	if r.code != 0 {
		t.Fatalf("hone-inspect %q: exit %d\nstderr: %s", args, r.code, r.stderr)
	}
	return r
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)

// traj makes a trajectory with a trainable assistant turn of ntok sampled
// tokens.
func traj(id, env string, step int64, reward *float64, ntok int) trajectory.Trajectory {
	toks := make([]int32, ntok)
	lps := make([]float32, ntok)
	for i := range toks {
		toks[i] = int32(100 + i)
		lps[i] = -0.25 * float32(i)
	}
	return trajectory.Trajectory{
		Run: "r1", Step: step, Model: "tiny@" + fmt.Sprint(step), ScenarioID: "s-" + id, Split: trajectory.SplitTrain,
		Payload: `{"q":"` + id + `"}`, ID: id, Env: env,
		Messages: []trajectory.Message{
			{Role: "system", Content: "You are terse."},
			{Role: "user", Content: "question " + id},
			{Role: "assistant", Content: "answer " + id, Trainable: true, TokenIDs: toks, Logprobs: lps,
				FinishReason: "stop", AnswerModel: "tiny@1", Latency: 1500 * time.Microsecond,
				ToolCalls: []trajectory.ToolCall{{ID: "c1", Type: "function", Name: "look", Arguments: `{"x":1}`}}},
			{Role: "tool", Content: "seen", ToolCallID: "c1"},
		},
		Tools:            []trajectory.Tool{{Type: "function", Name: "look", Description: "look around", Parameters: `{"type":"object"}`}},
		Reward:           reward,
		RewardComponents: []trajectory.RewardComponent{{Name: "exact", Value: 1, Explanation: "matched"}},
		Metrics:          map[string]float64{"turns": 2},
		Metadata:         map[string]string{"k": id},
		CreatedAt:        t0, StartedAt: t0.Add(time.Second), FinishedAt: t0.Add(2 * time.Second),
	}
}

var f = trajectory.Float64

// fixtures: a.parquet holds groups g1 (rewards 1, 0) and g2 (unscored) of
// env math at step 1; b.parquet holds g3 (rewards 0.5, 0.25, one failed)
// of env chess at step 2.
func fixtures(t *testing.T) (dir string, a, b []trajectory.Group) {
	t.Helper()
	dir = t.TempDir()
	a = []trajectory.Group{
		{ID: "g1", Trajectories: []trajectory.Trajectory{traj("t1", "math", 1, f(1), 3), traj("t2", "math", 1, f(0), 2)}},
		{ID: "g2", Trajectories: []trajectory.Trajectory{traj("t3", "math", 1, nil, 0)}},
	}
	b = []trajectory.Group{
		{ID: "g3", Trajectories: []trajectory.Trajectory{traj("t4", "chess", 2, f(0.5), 4), traj("t5", "chess", 2, f(0.25), 1)}},
	}
	b[0].Trajectories[1].Error = "env crashed"
	// Schema v2 fields, so that every command carries them.
	a[0].Metadata, a[0].Metrics = map[string]string{"scenario": "sums"}, map[string]float64{"judge_calls": 1}
	a[0].Trajectories[0].Logs = []string{"started"}
	a[0].Trajectories[0].AdditionalHistories = []trajectory.History{{
		Messages: []trajectory.Message{{Role: "user", Content: "summarise"}, {Role: "assistant", Content: "1+1=2", Trainable: true, TokenIDs: []int32{5, 6}}},
		Tools:    []trajectory.Tool{{Type: "function", Name: "note"}},
	}}
	ctx := context.Background()
	if err := trajectory.WriteFile(ctx, filepath.Join(dir, "a.parquet"), a, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := trajectory.WriteFile(ctx, filepath.Join(dir, "b.parquet"), b, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	// Read back what the writer stored, so comparisons are against the
	// format's own view (group ids filled in, and so on).
	var err error
	if a, err = trajectory.ReadFile(ctx, filepath.Join(dir, "a.parquet")); err != nil {
		t.Fatal(err)
	}
	if b, err = trajectory.ReadFile(ctx, filepath.Join(dir, "b.parquet")); err != nil {
		t.Fatal(err)
	}
	return dir, a, b
}

func readAll(t *testing.T, paths ...string) []trajectory.Group {
	t.Helper()
	g, err := trajectory.ReadAll(context.Background(), fileset.Files(paths...))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func readBytes(t *testing.T, data []byte) []trajectory.Group {
	t.Helper()
	r, err := trajectory.NewReader("stdout", bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var gs []trajectory.Group
	for {
		g, err := r.Next(context.Background())
		if err != nil {
			if err.Error() == "EOF" {
				return gs
			}
			t.Fatal(err)
		}
		gs = append(gs, g)
	}
}

func sameGroups(t *testing.T, what string, got, want []trajectory.Group) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		gj, _ := json.MarshalIndent(got, "", " ")
		wj, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("%s: groups differ\ngot:  %s\nwant: %s", what, gj, wj)
	}
}

func TestToJSONLFromJSONLRoundTrip(t *testing.T) {
	dir, a, b := fixtures(t)
	jsonl := filepath.Join(dir, "all.jsonl")
	r := mustRun(t, nil, "to-jsonl", "-o", jsonl, filepath.Join(dir, "*.parquet"))
	if !strings.Contains(r.stderr, "done: 5 trajectories") {
		t.Errorf("to-jsonl summary: %q", r.stderr)
	}
	data, err := os.ReadFile(jsonl)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte("\n")); n != 5 {
		t.Fatalf("%d JSON lines, want 5", n)
	}
	back := filepath.Join(dir, "back.parquet")
	r = mustRun(t, nil, "from-jsonl", "-o", back, jsonl)
	if !strings.Contains(r.stderr, "5 lines → 3 groups, 5 trajectories; generated 0 trajectory ids and 0 group ids") {
		t.Errorf("from-jsonl summary: %q", r.stderr)
	}
	sameGroups(t, "parquet → jsonl → parquet", readAll(t, back), append(a, b...))

	// The same through pipes: to-jsonl to stdout, from-jsonl from stdin to stdout.
	r = mustRun(t, nil, "to-jsonl", filepath.Join(dir, "a.parquet"))
	r = mustRun(t, []byte(r.stdout), "from-jsonl", "-")
	sameGroups(t, "through pipes", readBytes(t, []byte(r.stdout)), a)
}

func TestFromJSONLGeneratesIDs(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "chats.jsonl")
	lines := `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}
{"messages":[{"role":"user","content":"2+2"},{"role":"assistant","content":"4"}],"reward":1}

{"messages":[{"role":"user","content":"a"}],"group_id":"G","trajectory_id":"mine"}
{"messages":[{"role":"user","content":"b"}],"group_id":"G"}
`
	if err := os.WriteFile(in, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.parquet")
	r := mustRun(t, nil, "from-jsonl", "-o", out, dir) // a directory means its *.jsonl
	if want := "4 lines → 3 groups, 4 trajectories; generated 3 trajectory ids and 2 group ids"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr %q lacks %q", r.stderr, want)
	}
	one := filepath.Join(dir, "one.jsonl")
	if err := os.WriteFile(one, []byte(lines[:strings.Index(lines, "\n")+1]), 0o644); err != nil {
		t.Fatal(err)
	}
	r = mustRun(t, nil, "from-jsonl", "-o", filepath.Join(dir, "one.parquet"), one)
	if want := "1 line → 1 group, 1 trajectory; generated 1 trajectory id and 1 group id"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr %q lacks %q", r.stderr, want)
	}
	gs := readAll(t, out)
	if len(gs) != 3 || len(gs[2].Trajectories) != 2 || gs[2].ID != "G" || gs[2].Trajectories[0].ID != "mine" {
		t.Fatalf("groups %+v", gs)
	}
	ids := map[string]bool{}
	for _, g := range gs {
		for _, tr := range g.Trajectories {
			if tr.ID == "" || ids[tr.ID] {
				t.Errorf("empty or repeated id %q", tr.ID)
			}
			ids[tr.ID] = true
		}
	}
	if gs[1].Trajectories[0].Reward == nil || *gs[1].Trajectories[0].Reward != 1 {
		t.Errorf("reward of line 2 lost: %+v", gs[1].Trajectories[0].Reward)
	}
	// Importing the same file again gives the same ids.
	again := filepath.Join(dir, "again.parquet")
	mustRun(t, nil, "from-jsonl", "-o", again, in)
	sameGroups(t, "second import", readAll(t, again), gs)
}

func TestFromJSONLBadLine(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(in, []byte(`{"messages":[{"role":"user","content":"ok"}]}
{"messages":[{"role":"user","content":"x"}],"split":"bogus"}
`), 0o644)
	out := filepath.Join(dir, "out.parquet")
	r := run(t, nil, "from-jsonl", "-o", out, in)
	if r.code != 2 {
		t.Fatalf("exit %d, want 2; stderr %q", r.code, r.stderr)
	}
	for _, want := range []string{in + ":2", "split", "bogus"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr %q does not name %q", r.stderr, want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("output or temporary file left after a failed import: %v", ents)
	}
}

// TestFromJSONLDuplicatesAcrossFiles: a group or trajectory id that an
// earlier file gave is bad input (exit 2) naming both files, where it was
// the Writer's "already written to this file" (exit 1) naming one. Two
// files that hold the same id-less line at the same place make the same
// ids.
func TestFromJSONLDuplicatesAcrossFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	same := `{"messages":[{"role":"user","content":"hi"}]}` + "\n"
	a, b := write("a.jsonl", same), write("b.jsonl", same)
	g1 := write("g1.jsonl", `{"messages":[],"group_id":"G","trajectory_id":"x"}`+"\n")
	g2 := write("g2.jsonl", `{"messages":[],"group_id":"G","trajectory_id":"y"}`+"\n")
	t1 := write("t1.jsonl", `{"messages":[],"group_id":"A","trajectory_id":"x"}`+"\n")
	out := filepath.Join(dir, "out.parquet")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{a, b}, b + `: group_id "g-`},
		{[]string{g1, g2}, g2 + `: group_id "G" is also in ` + g1},
		{[]string{g1, t1}, t1 + `: trajectory_id "x" (group "A") is also in ` + g1},
	} {
		r := run(t, nil, append([]string{"from-jsonl", "-o", out}, c.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%v: output written: %v", c.args, err)
		}
	}
}

func TestCatIsTheUnion(t *testing.T) {
	dir, a, b := fixtures(t)
	out := filepath.Join(dir, "merged", "all.parquet")
	os.Mkdir(filepath.Dir(out), 0o755)
	r := mustRun(t, nil, "cat", "-o", out, filepath.Join(dir, "a.parquet"), filepath.Join(dir, "b.parquet"))
	if !strings.Contains(r.stderr, "2 files → 3 groups") {
		t.Errorf("cat summary %q", r.stderr)
	}
	sameGroups(t, "cat a b", readAll(t, out), append(a, b...))

	// Order follows the arguments; a directory expands to its files, sorted.
	r = mustRun(t, nil, "cat", filepath.Join(dir, "b.parquet"), filepath.Join(dir, "a.parquet"))
	sameGroups(t, "cat b a to stdout", readBytes(t, []byte(r.stdout)), append(append([]trajectory.Group{}, b...), a...))
	r = mustRun(t, nil, "cat", dir)
	sameGroups(t, "cat dir", readBytes(t, []byte(r.stdout)), append(a, b...))

	// stdin as an input.
	data, _ := os.ReadFile(filepath.Join(dir, "b.parquet"))
	r = mustRun(t, data, "cat", filepath.Join(dir, "a.parquet"), "-")
	sameGroups(t, "cat a -", readBytes(t, []byte(r.stdout)), append(a, b...))
}

func TestCatRefusesDuplicatesAndKeepsOldOutput(t *testing.T) {
	dir, _, _ := fixtures(t)
	// c.parquet repeats trajectory id t4 of b.parquet.
	g := []trajectory.Group{{ID: "g9", Trajectories: []trajectory.Trajectory{traj("t9", "math", 1, nil, 0), traj("t4", "math", 1, nil, 0)}}}
	if err := trajectory.WriteFile(context.Background(), filepath.Join(dir, "c.parquet"), g, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.parquet")
	os.WriteFile(out, []byte("earlier"), 0o644)
	r := run(t, nil, "cat", "-o", out, filepath.Join(dir, "[abc].parquet"))
	if r.code != 2 {
		t.Fatalf("exit %d, want 2; stderr %q", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, `trajectory_id "t4"`) || !strings.Contains(r.stderr, "c.parquet") {
		t.Errorf("stderr %q does not name the duplicate and the file", r.stderr)
	}
	if got, _ := os.ReadFile(out); string(got) != "earlier" {
		t.Errorf("failed cat replaced the output: %q", got)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 4 {
		t.Errorf("temporary file left: %v", ents)
	}
	// Naming a file twice reads it once.
	a := filepath.Join(dir, "a.parquet")
	r = mustRun(t, nil, "cat", a, a, dir+"/a.parquet")
	sameGroups(t, "cat a a", readBytes(t, []byte(r.stdout)), readAll(t, a))
}

// A file named with glob characters is read as named. Before, the cli took
// "round[1].parquet" literally and the trajectory reader globbed it again:
// with round1.parquet beside it, cat wrote round1.parquet's groups.
func TestCatReadsALiteralNameWithGlobCharacters(t *testing.T) {
	dir, a, b := fixtures(t)
	lit, other := filepath.Join(dir, "round[1].parquet"), filepath.Join(dir, "round1.parquet")
	if err := os.Rename(filepath.Join(dir, "a.parquet"), lit); err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, nil, "cat", lit)
	sameGroups(t, "cat round[1].parquet alone", readBytes(t, []byte(r.stdout)), a)
	if err := os.Rename(filepath.Join(dir, "b.parquet"), other); err != nil {
		t.Fatal(err)
	}
	r = mustRun(t, nil, "cat", lit)
	sameGroups(t, "cat round[1].parquet beside round1.parquet", readBytes(t, []byte(r.stdout)), a)
	// Named by a file:// URL, the same file.
	r = mustRun(t, nil, "cat", "file://"+filepath.ToSlash(other))
	sameGroups(t, "cat file://…/round1.parquet", readBytes(t, []byte(r.stdout)), b)
}

func TestValidate(t *testing.T) {
	dir, _, _ := fixtures(t)
	r := mustRun(t, nil, "validate", dir)
	if r.stdout != "ok: 2 files, 3 groups, 5 trajectories\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	// Counts of one are singular, as schema's and from-jsonl's are: it
	// said "ok: 1 files, 1 groups, 2 trajectories".
	if r := mustRun(t, nil, "validate", filepath.Join(dir, "b.parquet")); r.stdout != "ok: 1 file, 1 group, 2 trajectories\n" {
		t.Errorf("one file: stdout %q", r.stdout)
	}

	// A trajectory id in two files.
	ctx := context.Background()
	dup := filepath.Join(dir, "c.parquet")
	g := []trajectory.Group{{ID: "g9", Trajectories: []trajectory.Trajectory{traj("t9", "math", 1, nil, 0), traj("t4", "math", 1, nil, 0)}}}
	if err := trajectory.WriteFile(ctx, dup, g, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	r = run(t, nil, "validate", dir)
	if r.code != 2 {
		t.Fatalf("duplicate id: exit %d, want 2; stderr %q", r.code, r.stderr)
	}
	for _, want := range []string{"c.parquet", "row 1", `group "g9"`, `trajectory_id "t4"`, "b.parquet"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr %q does not name %q", r.stderr, want)
		}
	}
	os.Remove(dup)

	// A group split across two files.
	split := filepath.Join(dir, "d.parquet")
	g = []trajectory.Group{{ID: "g3", Trajectories: []trajectory.Trajectory{traj("t10", "chess", 2, nil, 0)}}}
	if err := trajectory.WriteFile(ctx, split, g, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	r = run(t, nil, "validate", dir)
	if r.code != 2 || !strings.Contains(r.stderr, `group "g3" split across files`) {
		t.Errorf("split group: exit %d, stderr %q", r.code, r.stderr)
	}
	os.Remove(split)

	// Not Parquet at all.
	junk := filepath.Join(dir, "junk.parquet")
	os.WriteFile(junk, []byte("not parquet"), 0o644)
	r = run(t, nil, "validate", junk)
	if r.code != 2 || !strings.Contains(r.stderr, "junk.parquet") {
		t.Errorf("junk file: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestStats(t *testing.T) {
	dir, _, _ := fixtures(t)
	r := mustRun(t, nil, "stats", "--json", dir)
	var s trajectory.Stats
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("stats --json: %v\n%s", err, r.stdout)
	}
	// The keys are snake_case, also in the nested objects.
	var raw map[string]any
	json.Unmarshal([]byte(r.stdout), &raw)
	byStep, _ := raw["by_step"].([]any)
	files, _ := raw["files"].([]any)
	reward, _ := raw["reward"].(map[string]any)
	if len(byStep) != 2 || len(files) != 2 || reward["mean"] == nil || raw["trainable_turns"] == nil ||
		byStep[0].(map[string]any)["step"] == nil || files[0].(map[string]any)["row_groups"] == nil || raw["Groups"] != nil {
		t.Errorf("stats --json keys are not snake_case:\n%s", r.stdout)
	}
	// Tokens of every history: t1's additional history adds 2, and its
	// two messages (one trainable) count too.
	if s.Groups != 3 || s.Trajectories != 5 || s.Errors != 1 || s.Tokens != 3+2+4+1+2 || len(s.Files) != 2 {
		t.Errorf("totals %+v", s.Summary)
	}
	if s.AdditionalHistories != 1 || s.ByStep[0].Tokens != 3+2+2 || s.ByEnv[1].Tokens != 3+2+2 {
		t.Errorf("additional histories %d, step 1 tokens %d, env math tokens %d", s.AdditionalHistories, s.ByStep[0].Tokens, s.ByEnv[1].Tokens)
	}
	// Rewards 1, 0, 0.5, 0.25 scored; one unscored.
	rs := s.Reward
	mean := (1 + 0 + 0.5 + 0.25) / 4
	if rs.Scored != 4 || rs.Unscored != 1 || !near(rs.Mean, mean) || rs.Min != 0 || rs.Max != 1 {
		t.Errorf("reward %+v", rs)
	}
	if len(s.ByStep) != 2 || s.ByStep[1].Step != 2 || !near(s.ByStep[1].Reward.Mean, 0.375) || s.ByStep[0].Trajectories != 3 {
		t.Errorf("by step %+v", s.ByStep)
	}
	if len(s.ByEnv) != 2 || s.ByEnv[0].Env != "chess" || s.ByEnv[1].Groups != 2 {
		t.Errorf("by env %+v", s.ByEnv)
	}

	r = mustRun(t, nil, "stats", dir)
	for _, want := range []string{"files 2, groups 3, trajectories 5, additional histories 1", "tokens 12, errors 1", "step 2", "env chess", "env math", "0.4375", "0.375"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stats table lacks %q:\n%s", want, r.stdout)
		}
	}
}

func near(x, y float64) bool { return x-y < 1e-12 && y-x < 1e-12 }

func TestHead(t *testing.T) {
	dir, _, _ := fixtures(t)
	r := mustRun(t, nil, "head", "-n", "3", dir)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), r.stdout)
	}
	for i, want := range []string{"t1", "t2", "t3"} {
		var rec map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &rec); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if rec["trajectory_id"] != want {
			t.Errorf("line %d: trajectory_id %v, want %s", i, rec["trajectory_id"], want)
		}
	}
	// -n cuts inside a group; --pretty indents.
	r = mustRun(t, nil, "head", "-n", "1", "--pretty", dir)
	var rec map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &rec); err != nil || rec["trajectory_id"] != "t1" || !strings.Contains(r.stdout, "\n  \"") {
		t.Errorf("pretty head: %v\n%s", err, r.stdout)
	}
	if r := mustRun(t, nil, "head", "-n", "0", dir); strings.Count(r.stdout, "\n") != 5 {
		t.Errorf("head -n 0 printed %d lines, want all 5", strings.Count(r.stdout, "\n"))
	}
}

func TestSchema(t *testing.T) {
	dir, _, _ := fixtures(t)
	r := mustRun(t, nil, "schema")
	for _, want := range []string{"schema version 2", "trajectory_id", "token_ids", "reward", "optional binary reasoning_content", "additional_histories", "group_metrics"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("schema lacks %q", want)
		}
	}
	want := r.stdout[strings.Index(r.stdout, "\n")+1:]
	r = mustRun(t, nil, "schema", filepath.Join(dir, "a.parquet"))
	for _, s := range []string{"a.parquet", "3 rows", "1 row group\n", "metadata hone.schema_version = 2", want} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("file schema lacks %q:\n%s", s, r.stdout)
		}
	}
	data, _ := os.ReadFile(filepath.Join(dir, "a.parquet"))
	r = mustRun(t, data, "schema", "-")
	if !strings.HasPrefix(r.stdout, fmt.Sprintf("# -: %d bytes, 3 rows", len(data))) || !strings.Contains(r.stdout, want) {
		t.Errorf("schema of stdin:\n%s", r.stdout)
	}
	// Any Parquet file can be shown, also one that is not a trajectory
	// file; validate rejects that one, naming a missing column.
	other := filepath.Join(t.TempDir(), "other.parquet")
	type otherRow struct {
		Score float64 `parquet:"score"`
	}
	if err := parquet.WriteFile(other, []otherRow{{1}, {2}}); err != nil {
		t.Fatal(err)
	}
	r = mustRun(t, nil, "schema", other)
	if !strings.Contains(r.stdout, "2 rows") || !strings.Contains(r.stdout, "double score") {
		t.Errorf("schema of a foreign file:\n%s", r.stdout)
	}
	if r := run(t, nil, "validate", other); r.code != 2 || !strings.Contains(r.stderr, "column trajectory_id: missing") {
		t.Errorf("validate of a foreign file: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := run(t, []byte("junk"), "schema", "-"); r.code != 2 || !strings.Contains(r.stderr, "not a Parquet file") {
		t.Errorf("schema of junk: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestUsageErrors(t *testing.T) {
	dir, _, _ := fixtures(t)
	tests := [][]string{
		{"head"},                                 // no input
		{"stats", filepath.Join(dir, "*.nope")},  // glob matches nothing
		{"validate", filepath.Join(dir, "nope")}, // missing file
		{"cat", "--bogus", dir},                  // unknown flag
		{"bogus"},                                // unknown command
		{"head", "-n", "-1", dir},                // bad value
		{"--log-level", "loud", "stats", dir},    // bad log level
		{"to-jsonl", "-o", dir, dir},             // output is a directory
		{"stats", "ftp://host/round-1.parquet"},  // a scheme no driver takes
		{"cat", "-o", "ftp://host/x.parquet", dir},
	}
	for _, args := range tests {
		r := run(t, nil, args...)
		if r.code != 2 || !strings.HasPrefix(r.stderr, "hone-inspect: ") {
			t.Errorf("%q: exit %d, stderr %q; want 2 and a message", args, r.code, r.stderr)
		}
	}
}

func TestHelpShowsExample(t *testing.T) {
	for _, sub := range []string{"schema", "head", "stats", "validate", "to-jsonl", "from-jsonl", "cat"} {
		r := mustRun(t, nil, sub, "--help")
		if !strings.Contains(r.stdout, "Examples:\n  hone-inspect "+sub) {
			t.Errorf("%s --help has no example:\n%s", sub, r.stdout)
		}
	}
}

// A Parquet-writing command whose stdout is a terminal refuses, before it
// reads anything, while text output to a terminal is fine.
func TestParquetToTerminalRefused(t *testing.T) {
	dir, _, _ := fixtures(t)
	pty, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("open /dev/ptmx: %v", err)
		}
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer pty.Close()
	for _, args := range [][]string{{"cat", dir}, {"from-jsonl", filepath.Join(dir, "x.jsonl")}} {
		cmd := exec.Command(binary, args...)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = pty, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "refusing to write Parquet to a terminal") {
			t.Errorf("%q to a terminal: %v, stderr %q", args, err, stderr.String())
		}
	}
}

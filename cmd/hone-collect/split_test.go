package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect/env/envtest"
)

// splitRows reads a written file as "scenario_id:split", one per row, in
// order.
func splitRows(t *testing.T, path string) []string {
	t.Helper()
	var got []string
	for _, g := range read(t, path) {
		for _, tr := range g.Trajectories {
			got = append(got, tr.ScenarioID+":"+tr.Split)
		}
	}
	return got
}

// TestTaskFileSplitFiltered: the docs' task file marks Peru "val".
// --split train relabelled every task of --env-opt tasks=FILE train, Peru
// too, so hone-train trained on the held-out task; --split val labelled
// France, Japan and Kenya, which hone-train trains on, val. A task's own
// split is data: --split plays the tasks of its split (those without one
// are train, as hone-train reads them), as --scenarios FILE does, and
// a split the file lacks is refused, naming the file and its splits. Its
// tasks do not depend on the seed: no warning about --seed.
func TestTaskFileSplitFiltered(t *testing.T) {
	py := envtest.Python(t, os.Getenv("CI") != "")
	tasks, err := filepath.Abs("../../pipelines/mcp-env-example/tasks.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	server, err := filepath.Abs("../../pipelines/mcp-env-example/server.py")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(split, groups string) (result, string) {
		out := filepath.Join(dir, split+groups+".parquet")
		return collectBin(t, "--env", "mcp", "--env-opt", "tasks="+tasks, "--env-opt", "cmd="+py+" "+server,
			"--split", split, "--groups", groups, "-G", "1", "--policy", "scripted:replay", "-o", out), out
	}
	for _, c := range []struct {
		split, groups string
		want          []string
	}{
		{"train", "4", []string{"france:train", "japan:train", "kenya:train", "france-1:train"}},
		{"val", "2", []string{"peru:val", "peru-1:val"}},
	} {
		r, out := run(c.split, c.groups)
		if r.code != 0 {
			t.Fatalf("--split %s: exit %d: %s", c.split, r.code, r.stderr)
		}
		if got := splitRows(t, out); !slices.Equal(got, c.want) {
			t.Errorf("--split %s: rows %q, want %q", c.split, got, c.want)
		}
		if strings.Contains(r.stderr, "--seed") {
			t.Errorf("--split %s: stderr %q warns of --seed, which a task file's tasks do not depend on", c.split, r.stderr)
		}
	}
	r, _ := run("test", "4")
	if r.code != 2 || !strings.Contains(r.stderr, "tasks.jsonl") || !strings.Contains(r.stderr, "1 val") || !strings.Contains(r.stderr, "3 without a split") {
		t.Errorf("--split test: exit %d, stderr %q; want exit 2 naming the file and its splits", r.code, r.stderr)
	}
}

// TestScenarioFileSplitTrainTakesUnlabelled: the docs' task file as
// --scenarios: its three tasks without a split are the ones hone-train
// trains on, yet --split train found "none of its 4 scenarios" and
// stopped. They are played, written as train; Peru is not.
func TestScenarioFileSplitTrainTakesUnlabelled(t *testing.T) {
	py := envtest.Python(t, os.Getenv("CI") != "")
	server, err := filepath.Abs("../../pipelines/mcp-env-example/server.py")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "o.parquet")
	r := collectBin(t, "--scenarios", "../../pipelines/mcp-env-example/tasks.jsonl", "--env-opt", "cmd="+py+" "+server,
		"--split", "train", "-G", "1", "--policy", "scripted:replay", "-o", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if got, want := splitRows(t, out), []string{"france:train", "japan:train", "kenya:train"}; !slices.Equal(got, want) {
		t.Errorf("rows %q, want %q", got, want)
	}
}

// labelledProgram is a stdio environment whose scenarios carry their own
// split: a and d train, b val, c test, whatever it is asked; it records
// the split each scenarios request asked for in asked.txt.
const labelledProgram = `import json, sys
for line in sys.stdin:
    r = json.loads(line)
    op = r["op"]
    if op == "hello":
        out = {"name": "labelled", "policies": ["answer"]}
    elif op == "scenarios":
        with open("asked.txt", "a") as f:
            f.write(r.get("split", "-") + "\n")
        out = {"scenarios": [{"id": "a", "split": "train"}, {"id": "b", "split": "val"},
                             {"id": "c", "split": "test"}, {"id": "d", "split": "train"}]}
    elif op == "reset":
        out = {"messages": [{"role": "user", "content": "say hi"}], "tools": []}
    elif op == "act":
        out = {"message": {"content": "hi"}}
    else:
        out = {"done": True, "reward": 1, "metrics": {}}
    print(json.dumps(out), flush=True)
`

// TestStdioScenarioSplitFiltered: a stdio program that labels its
// scenarios had them all relabelled with --split: its val and test
// scenarios came out train under --split train. Its labels win: --split
// plays the scenarios of that split (and asks the program for it), and a
// split it does not answer is refused, naming the splits it did.
func TestStdioScenarioSplitFiltered(t *testing.T) {
	py := envtest.Python(t, os.Getenv("CI") != "")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "env.py"), []byte(labelledProgram), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(split string) (result, string) {
		out := filepath.Join(dir, split+".parquet")
		return collectBin(t, "--env", "stdio", "--env-opt", "cmd="+py+" env.py", "--env-opt", "dir="+dir,
			"--split", split, "--groups", "4", "--seed", "5", "-G", "1", "--policy", "scripted", "-o", out), out
	}
	for split, want := range map[string][]string{
		"train": {"a:train", "d:train"},
		"val":   {"b:val"},
		"test":  {"c:test"},
	} {
		r, out := run(split)
		if r.code != 0 {
			t.Fatalf("--split %s: exit %d: %s", split, r.code, r.stderr)
		}
		if got := splitRows(t, out); !slices.Equal(got, want) {
			t.Errorf("--split %s: rows %q, want %q", split, got, want)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "asked.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(b)); !slices.Contains(got, "val") || !slices.Contains(got, "test") {
		t.Errorf("the program was asked for splits %q; want each run's --split", got)
	}
}

// TestStdioSplitNoneAnsweredSaysWhatToDo: a stdio program that labels
// every scenario train, run with --split val, is refused (exit 2) naming
// the splits it answered, as docs/stdio-env.md says, and the message says
// what the program should do: its scenarios request carries "split",
// and a scenario of that split, or one without a label, is played. The
// message named the counts only, leaving the author of a program that
// ignores "split" to find the protocol's field in the page.
func TestStdioSplitNoneAnsweredSaysWhatToDo(t *testing.T) {
	py := envtest.Python(t, os.Getenv("CI") != "")
	dir := t.TempDir()
	trainOnly := strings.Replace(labelledProgram,
		`[{"id": "a", "split": "train"}, {"id": "b", "split": "val"},
                             {"id": "c", "split": "test"}, {"id": "d", "split": "train"}]`,
		`[{"id": "a", "split": "train"}, {"id": "d", "split": "train"}]`, 1)
	if trainOnly == labelledProgram {
		t.Fatal("labelledProgram's scenarios changed: the test no longer makes a train-only program")
	}
	if err := os.WriteFile(filepath.Join(dir, "env.py"), []byte(trainOnly), 0o644); err != nil {
		t.Fatal(err)
	}
	r := collectBin(t, "--env", "stdio", "--env-opt", "cmd="+py+" env.py", "--env-opt", "dir="+dir,
		"--split", "val", "--groups", "2", "--seed", "5", "-G", "1", "--policy", "scripted", "-o", filepath.Join(dir, "val.parquet"))
	if r.code != 2 || !strings.Contains(r.stderr, `asked for split "val"`) || !strings.Contains(r.stderr, "(it has 2 train)") {
		t.Fatalf("exit %d, stderr %q; want exit 2 naming split val and the 2 train scenarios", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, `"split"`) || !strings.Contains(r.stderr, "without one") {
		t.Errorf("stderr %q does not say what the program should answer (the request's \"split\", or scenarios without one)", r.stderr)
	}
}

// TestTaskFileSplitRepeatIDsAvoidOtherSplits: a repeat's id ("peru-1")
// is taken again while it names another task of the file. Chosen by
// --split, the repeats were checked against the split's tasks alone, so a
// train task named "peru-1" and --split val's second round of Peru had one
// id: two scenarios of one task file told apart by nothing but their
// split.
func TestTaskFileSplitRepeatIDsAvoidOtherSplits(t *testing.T) {
	py := envtest.Python(t, os.Getenv("CI") != "")
	server, err := filepath.Abs("../../pipelines/mcp-env-example/server.py")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../../pipelines/mcp-env-example/tasks.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		lines = append(lines, l)
		if strings.Contains(l, `"id":"france"`) {
			// France again, as a train task named as Peru's repeat is.
			lines = append(lines, strings.Replace(l, `"id":"france"`, `"id":"peru-1"`, 1))
		}
	}
	dir := t.TempDir()
	tasks := filepath.Join(dir, "tasks.jsonl")
	if err := os.WriteFile(tasks, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "val.parquet")
	r := collectBin(t, "--env", "mcp", "--env-opt", "tasks="+tasks, "--env-opt", "cmd="+py+" "+server,
		"--split", "val", "--groups", "2", "-G", "1", "--policy", "scripted:replay", "-o", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	got := splitRows(t, out)
	if len(got) != 2 || got[0] != "peru:val" || strings.HasPrefix(got[1], "peru-1:") {
		t.Errorf("rows %q: want peru:val and a repeat whose id names no other task of the file (peru-1 is a train task)", got)
	}
}

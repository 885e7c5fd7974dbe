package collect_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect"
)

// groupIDs runs the scripted policy over the scenario file at path, with
// run name r and seed 1, and returns the ids of the groups written.
func groupIDs(t *testing.T, path, split string, groups int) []string {
	t.Helper()
	return runIDs(t, collect.Options{Env: "guess", Scenarios: path, Split: split, Groups: groups, GroupSize: 1, Concurrency: 1, Seed: 1, Run: "r",
		Policy: "scripted:bisect"})
}

// runIDs runs o and returns the ids of the groups it wrote.
func runIDs(t *testing.T, o collect.Options) []string {
	t.Helper()
	var out bytes.Buffer
	o.Out = &out
	if err := collect.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, g := range readGroups(t, out.Bytes()) {
		ids = append(ids, g.ID)
	}
	return ids
}

// Regression: group ids were <run>-s<seed>-g<place>, so two runs of one
// run name and seed on different --scenarios files (or on two splits of
// one file) wrote the same ids for different scenarios, and files of both
// read together held each group id twice. The id now carries a short
// digest of the scenarios played: the same file, split and seed give the
// same ids on every run (a shard's are the whole run's), others differ.
func TestGroupIDsNameTheScenarios(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	os.WriteFile(a, []byte(`{"id":"x","environment":"guess","payload":{"secret":3,"n":8,"turns":3},"split":"train"}
{"id":"y","environment":"guess","payload":{"secret":6,"n":8,"turns":3},"split":"val"}
`), 0o644)
	os.WriteFile(b, []byte(`{"id":"x","environment":"guess","payload":{"secret":5,"n":8,"turns":3},"split":"train"}
{"id":"y","environment":"guess","payload":{"secret":6,"n":8,"turns":3},"split":"val"}
`), 0o644)
	idsA := groupIDs(t, a, "", 0)
	if again := groupIDs(t, a, "", 0); strings.Join(again, " ") != strings.Join(idsA, " ") {
		t.Errorf("the same file gave ids %v, then %v", idsA, again)
	}
	if len(idsA) != 2 || !strings.HasPrefix(idsA[0], "r-s1-") || !strings.HasSuffix(idsA[0], "-g00000") {
		t.Fatalf("ids %v, want r-s1-…-g00000 and the next", idsA)
	}
	// The first --groups of a file are the same episodes as in a run of
	// all of it: the same ids.
	if first := groupIDs(t, a, "", 1); len(first) != 1 || first[0] != idsA[0] {
		t.Errorf("--groups 1 gave %v, want [%s]", first, idsA[0])
	}
	if idsB := groupIDs(t, b, "", 0); idsB[0] == idsA[0] || idsB[1] == idsA[1] {
		t.Errorf("files of other scenarios gave ids %v and %v", idsA, idsB)
	}
	if train, val := groupIDs(t, a, "train", 0), groupIDs(t, a, "val", 0); train[0] == val[0] {
		t.Errorf("the train and val splits of one file both gave %s", train[0])
	}
}

// generatedIDs runs the scripted policy of env on generated scenarios,
// with run name r and seed 1, and returns the ids of the groups written.
func generatedIDs(t *testing.T, env string, opts map[string]string, split string) []string {
	t.Helper()
	return runIDs(t, collect.Options{Env: env, EnvOpts: opts, Split: split, Groups: 2, GroupSize: 1, Concurrency: 1, Seed: 1, Run: "r",
		Policy: "scripted"})
}

// Regression: generated scenarios' group ids were <run>-s<seed>-g<place>
// whatever the environment, so runs of one run name and seed with another
// --env or --env-opt (other scenarios) or --split wrote the same ids, and
// their files read together held each group id twice. The id now carries
// a digest of the environment's name, settings and the split: the same
// ones give the same ids on every run, others differ.
func TestGeneratedGroupIDsNameTheEnv(t *testing.T) {
	base := generatedIDs(t, "guess", map[string]string{"n": "8"}, "")
	if again := generatedIDs(t, "guess", map[string]string{"n": "8"}, ""); strings.Join(again, " ") != strings.Join(base, " ") {
		t.Errorf("the same settings gave ids %v, then %v", base, again)
	}
	if len(base) != 2 || !strings.HasPrefix(base[0], "r-s1-e") || !strings.HasSuffix(base[0], "-g00000") {
		t.Fatalf("ids %v, want r-s1-e…-g00000 and the next", base)
	}
	for name, ids := range map[string][]string{
		"--env-opt n=16":  generatedIDs(t, "guess", map[string]string{"n": "16"}, ""),
		"no --env-opt":    generatedIDs(t, "guess", nil, ""),
		"--env tictactoe": generatedIDs(t, "tictactoe", nil, ""),
		"--split val":     generatedIDs(t, "guess", map[string]string{"n": "8"}, "val"),
	} {
		if ids[0] == base[0] {
			t.Errorf("%s gave the ids %v of a run without it", name, ids)
		}
	}
}

// Regression: the tag of generated scenarios was a digest of --env,
// --env-opt and --split only, so a program whose scenarios changed under
// the same command line (an edited `--env mcp --env-opt tasks=FILE`, a
// stdio program given other data) wrote the old ids for the new scenarios,
// and the two runs' files read together held each id twice, for different
// scenarios: what the digests were added to prevent. The tag now covers the
// scenarios generated as well; the same scenarios still give the same ids.
func TestGeneratedGroupIDsNameTheScenarios(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "env.py"), []byte(`import sys, json
for line in sys.stdin:
    r = json.loads(line)
    if r["op"] == "hello":
        out = {"name": "tasks", "policies": ["answer"]}
    elif r["op"] == "scenarios":
        tasks = open("tasks.txt").read().split()
        out = {"scenarios": [{"id": "t%d" % i, "payload": tasks[i % len(tasks)]} for i in range(r["n"])]}
    elif r["op"] == "reset":
        out = {"messages": [{"role": "user", "content": r["scenario"]["payload"]}]}
    elif r["op"] == "act":
        out = {"message": {"content": "done"}}
    else:
        out = {"done": True, "reward": 1}
    print(json.dumps(out), flush=True)
`), 0o644)
	opts := map[string]string{"cmd": py + " -S env.py", "dir": dir}
	tasks := func(s string) {
		if err := os.WriteFile(filepath.Join(dir, "tasks.txt"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tasks("add multiply")
	first := generatedIDs(t, "stdio", opts, "")
	if again := generatedIDs(t, "stdio", opts, ""); strings.Join(again, " ") != strings.Join(first, " ") {
		t.Errorf("the same scenarios gave ids %v, then %v", first, again)
	}
	tasks("divide subtract")
	if edited := generatedIDs(t, "stdio", opts, ""); edited[0] == first[0] || edited[1] == first[1] {
		t.Errorf("other scenarios under the same command line gave ids %v, as the first run's %v", edited, first)
	}
}

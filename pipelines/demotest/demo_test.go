package demotest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/gobuild"
	"github.com/hone-rl/hone/internal/procgroup"
	"github.com/hone-rl/hone/internal/waitfor"
)

type result struct {
	Model       string   `json:"model"`
	Temperature float64  `json:"temperature"`
	Episodes    int      `json:"episodes"`
	Success     *float64 `json:"success"`
	Invalid     *float64 `json:"invalid"`
}

type summary struct {
	Seed    int      `json:"seed"`
	Split   string   `json:"split"`
	Results []result `json:"results"`
}

// need fails under CI and skips elsewhere when a tool is missing.
func need(t *testing.T, tool string) {
	t.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is needed by the demo: %v", tool, err)
		}
		t.Skipf("%s not installed: %v", tool, err)
	}
}

// stageBinaries are the five stage binaries the demo runs.
var stageBinaries = []string{"hone-train", "hone-collect", "hone-score", "hone-serve", "hone-inspect"}

// built holds the binaries built once for the package's tests: linking five
// large binaries is a good part of each test's time on two cores.
var built struct {
	once sync.Once
	dir  string
	err  error
}

// buildBinaries builds the five stage binaries of the repository at root
// (once per test process) and links them into dir; it returns dir.
func buildBinaries(ctx context.Context, t *testing.T, root, dir string) string {
	t.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "hone-demotest-bin-")
		if built.err != nil {
			return
		}
		var pkgs []string
		for _, name := range stageBinaries {
			pkgs = append(pkgs, filepath.Join(root, "cmd", name))
		}
		built.err = gobuild.Commands(ctx, built.dir, pkgs...)
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range stageBinaries {
		if err := os.Symlink(filepath.Join(built.dir, name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// scriptGrace is how long a cancelled script has, after SIGTERM to its
// process group, before Go kills it and the test kills what is left.
const scriptGrace = 10 * time.Second

// scriptCmd is exec.CommandContext for a demo script, or a program that
// runs one (make, bash), started in a process group of its own: when ctx
// ends (the test's timeout, a cancel) the whole group gets SIGTERM, as a
// Ctrl-C reaches the script, its background hone-serve and the stage
// running; after scriptGrace Go kills the script, and the test's clean-up
// the rest of its group. Go's default, SIGKILL to the script alone, left
// the server and the stage running on the machine.
func scriptCmd(ctx context.Context, t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	procgroup.Own(cmd)
	cmd.Cancel = func() error { return procgroup.Terminate(cmd) }
	cmd.WaitDelay = scriptGrace
	t.Cleanup(func() {
		// Only after a cancel: a script that ended by itself stopped its
		// server, and its group's id may be another's by now.
		if cmd.Process != nil && ctx.Err() != nil {
			if err := procgroup.Kill(cmd); err != nil {
				t.Errorf("killing what is left of %s: %v", name, err)
			}
		}
	})
	return cmd
}

// TestMain removes the binaries built for the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// loopSetup skips a loop test under -short, checks the tools the demo
// scripts use, and builds every binary: the repository root, the binaries'
// folder, and a context of 5 minutes for the run.
func loopSetup(t *testing.T) (ctx context.Context, root, bin string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds every binary and runs the loop (~30 s)")
	}
	for _, tool := range []string{"jq", "curl", "python3", "column"} {
		need(t, tool)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx, root, buildBinaries(ctx, t, root, t.TempDir())
}

func TestDemoPlumbing(t *testing.T) {
	ctx, root, bin := loopSetup(t)

	out := filepath.Join(t.TempDir(), "demo")
	cmd := scriptCmd(ctx, t, "./pipelines/demo.sh")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "BIN="+bin, "OUT="+out, "SEED=3",
		"SFT_STEPS=4", "ROUNDS=2", "RL_GROUPS=2", "GSIZE=4", "EVAL_EPISODES=6", "EVAL_SPLIT=val")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	if err := cmd.Run(); err != nil {
		t.Fatalf("demo.sh: %v\n%s", err, stdout.String())
	}

	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatalf("summary: %v\n%s", err, stdout.String())
	}
	var s summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("summary.json: %v\n%s", err, b)
	}
	if s.Seed != 3 || s.Split != "val" {
		t.Errorf("summary seed/split = %d/%q, want 3/val", s.Seed, s.Split)
	}
	want := []struct {
		model string
		temp  float64
	}{{"base", 0}, {"base", 1}, {"warmup", 0}, {"warmup", 1}, {"rl", 0}, {"rl", 1}}
	if len(s.Results) != len(want) {
		t.Fatalf("summary has %d results, want %d:\n%s", len(s.Results), len(want), b)
	}
	for i, w := range want {
		r := s.Results[i]
		if r.Model != w.model || r.Temperature != w.temp || r.Episodes != 6 || r.Success == nil || r.Invalid == nil {
			t.Errorf("result %d = %+v, want model %s at T=%g over 6 episodes with rates", i, r, w.model, w.temp)
			continue
		}
		if *r.Success < 0 || *r.Success > 1 || *r.Invalid < 0 || *r.Invalid > 1 {
			t.Errorf("result %d: rates outside [0,1]: %+v", i, r)
		}
	}
	// Each round trained one GRPO step and the server served it; the log
	// shows the first and the last round's step (the last used to be left
	// out unless its number was a multiple of 5).
	for _, line := range []string{"    round 1: {\"step\":1,", "    round 2: {\"step\":2,"} {
		if !strings.Contains(stdout.String(), line) {
			t.Errorf("demo.sh's output lacks %q:\n%s", line, stdout.String())
		}
	}
	for _, p := range []string{"adapters/rl/step-000002", "scored/round-002.parquet", "eval/rl-T1.parquet"} {
		if _, err := os.Stat(filepath.Join(out, p)); err != nil {
			t.Errorf("missing artefact: %v", err)
		}
	}
	// The held-out episodes say so in their rows: they used to be labelled
	// train, so that a later hone-train or report fed them took them for
	// training data.
	for _, f := range []string{"base-T0.jsonl", "rl-T1.jsonl"} {
		checkSplit(t, filepath.Join(out, "eval", f), "val")
	}
	// The demo's eval files and trajectories go through the report as they
	// are: --eval used to fail on them with ":1: unexpected EOF".
	page := filepath.Join(out, "report.html")
	rep := exec.CommandContext(ctx, filepath.Join(bin, "hone-inspect"), "report", filepath.Join(out, "adapters", "rl"),
		"--eval", filepath.Join(out, "eval", "*.json"), "--trajectories", filepath.Join(out, "scored"), "-o", page)
	if b, err := rep.CombinedOutput(); err != nil {
		t.Fatalf("hone-inspect report on the demo's files: %v\n%s", err, b)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, frag := range []string{`"id":"eval-success"`, "<th>base T=0</th>", "<th>rl T=1</th><td>2</td>", "sampled by warmup@4 · trained at step 1"} {
		if !strings.Contains(string(html), frag) {
			t.Errorf("the report on the demo lacks %q", frag)
		}
	}
	if fi, err := os.Stat(filepath.Join(out, "report.html")); err != nil || fi.Size() == 0 {
		t.Errorf("demo.sh did not end with a report: %v", err)
	}
	if !strings.Contains(stdout.String(), "GRPO gain (warmup -> rl)") {
		t.Errorf("no before/after line in the output:\n%s", stdout.String())
	}
	// The server must be gone: no process still has the model folder open.
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		c, err := os.ReadFile(p)
		if err == nil && bytes.Contains(c, []byte(out)) && bytes.Contains(c, []byte("hone-serve")) {
			t.Errorf("hone-serve still running after the demo: %s %q", p, bytes.ReplaceAll(c, []byte{0}, []byte{' '}))
		}
	}
}

// checkSplit fails t unless every episode of the JSON lines file (a
// hone-inspect to-jsonl output) is of split want.
func checkSplit(t *testing.T, file, want string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i, line := range lines {
		var row struct {
			Split string `json:"split"`
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%s:%d: %v", file, i+1, err)
		}
		if row.Split != want {
			t.Fatalf("%s:%d: split %q, want %q (%d rows)", file, i+1, row.Split, want, len(lines))
		}
	}
}

// TestDemoOtherJob runs demo.sh as a user adapts it to another job: another
// environment without options, two scorers (one with blanks in it), another
// eval metric and columns (a ratio among them), no warm-up. The summary and
// the eval files follow the settings, and the run ends with a report.
func TestDemoOtherJob(t *testing.T) {
	ctx, root, bin := loopSetup(t)
	out := filepath.Join(t.TempDir(), "demo")
	cmd := scriptCmd(ctx, t, "./pipelines/demo.sh")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "BIN="+bin, "OUT="+out, "SEED=3", "ENV=tictactoe", "ENV_OPTS=",
		"SCORERS=env; shaped=formula:env - 0.5*illegal", "EVAL_METRIC=win", "EVAL_COLUMNS=illegal moves_per_illegal=moves/illegal",
		"SFT_STEPS=0", "ROUNDS=2", "RL_GROUPS=2", "GSIZE=4", "EVAL_EPISODES=6", "EVAL_SPLIT=val")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	if err := cmd.Run(); err != nil {
		t.Fatalf("demo.sh: %v\n%s", err, stdout.String())
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("summary.json: %v\n%s", err, b)
	}
	if len(s.Results) != 4 {
		t.Fatalf("summary has %d results, want base and rl at two temperatures (no warm-up):\n%s", len(s.Results), b)
	}
	for _, r := range s.Results {
		if r["metric"] != "win" || r["success"] == nil || r["illegal"] == nil || r["model"] == "warmup" {
			t.Errorf("result %v: want the mean of win as success, an illegal column, no warm-up", r)
		}
		if _, ok := r["moves_per_illegal"]; !ok {
			t.Errorf("result %v lacks the ratio column moves_per_illegal", r)
		}
	}
	// The rounds were scored by the chain given: env, then the shaped reward.
	st, err := exec.CommandContext(ctx, filepath.Join(bin, "hone-inspect"), "stats", "--json", filepath.Join(out, "scored")).Output()
	if err != nil || !strings.Contains(string(st), `"hone.score.chain": "env | shaped=formula:env - 0.5*illegal"`) {
		t.Errorf("scored rounds: %v\n%s", err, st)
	}
	if fi, err := os.Stat(filepath.Join(out, "report.html")); err != nil || fi.Size() == 0 {
		t.Errorf("demo.sh did not end with a report: %v", err)
	}
	if !strings.Contains(stdout.String(), "success = mean win per episode") || strings.Contains(stdout.String(), "GRPO gain (warmup") {
		t.Errorf("summary lines:\n%s", stdout.String())
	}
}

// TestDemoUnknownEvalMetric: an EVAL_METRIC or EVAL_COLUMNS metric that
// the environment does not report stops the run at the first evaluation
// with exit 2, naming it and the metrics the episodes have. It used to
// count as 0 everywhere, a summary of zeros that read as a model that never
// succeeds. EVAL_COLUMNS is a list as README says ENV_OPTS and SCORERS
// are, ";"-separated, or separated by spaces: with ";" it was split on
// spaces only, and "invalid;" came back as a metric of its own.
func TestDemoUnknownEvalMetric(t *testing.T) {
	ctx, root, bin := loopSetup(t)
	out := filepath.Join(t.TempDir(), "demo")
	cmd := scriptCmd(ctx, t, "./pipelines/demo.sh")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "BIN="+bin, "OUT="+out, "EVAL_METRIC=wins", "EVAL_COLUMNS=invalid; per_turn=found/trun",
		"SFT_STEPS=0", "ROUNDS=1", "RL_GROUPS=2", "GSIZE=2", "EVAL_EPISODES=4", "EVAL_SPLIT=val")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("demo.sh with EVAL_METRIC=wins: %v, want exit 2\n%s", err, stdout.String())
	}
	said := stdout.String()
	for _, want := range []string{"metric(s) trun wins ", "the episodes report: ", " found ", " invalid "} {
		if !strings.Contains(said, want) {
			t.Errorf("the error does not say %q:\n%s", want, said)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "adapters", "rl")); err == nil {
		t.Errorf("demo.sh trained before it refused the metric")
	}
}

// TestTictactoeEnvOpts runs tictactoe.sh, tiny, with two environment
// options in ENV_OPTS, ";"-separated with blanks as demo.sh takes them:
// the scripted policies' games after demo.sh get the same options, and
// the summary gets their win-or-draw fractions.
func TestTictactoeEnvOpts(t *testing.T) {
	ctx, root, bin := loopSetup(t)
	out := filepath.Join(t.TempDir(), "ttt")
	cmd := scriptCmd(ctx, t, "./pipelines/tictactoe.sh")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "BIN="+bin, "OUT="+out, "SEED=3", "ENV_OPTS=opponent=random; threat-start=0",
		"SFT_STEPS=2", "ROUNDS=1", "RL_GROUPS=2", "GSIZE=4", "EVAL_EPISODES=4", "EVAL_SPLIT=val")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	if err := cmd.Run(); err != nil {
		log, _ := os.ReadFile(filepath.Join(out, "eval", "collect.log"))
		t.Fatalf("tictactoe.sh: %v\n%s\neval/collect.log:\n%s", err, stdout.String(), log)
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Scripted map[string]struct {
			WinOrDraw *float64 `json:"win_or_draw"`
		} `json:"scripted"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("summary.json: %v\n%s", err, b)
	}
	for _, p := range []string{"teacher", "blocker"} {
		if s.Scripted[p].WinOrDraw == nil {
			t.Errorf("summary has no win_or_draw of the scripted %s:\n%s", p, b)
		}
		checkSplit(t, filepath.Join(out, "eval", "scripted-"+p+".jsonl"), "val")
	}
}

// TestDemoOutWithGlobCharacters runs demo.sh with an OUT whose name holds
// blanks and glob characters ("[", "*"): every stage takes the names as
// they are, and the run ends with its report. The report used to get
// --eval "$OUT/eval/*.json", a pattern that such a folder name turns into
// one matching nothing, so a run that had trained and evaluated failed at
// its last step ("glob matches no files").
func TestDemoOutWithGlobCharacters(t *testing.T) {
	ctx, root, bin := loopSetup(t)
	out := filepath.Join(t.TempDir(), "my runs [1] *", "demo")
	cmd := scriptCmd(ctx, t, "./pipelines/demo.sh")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "BIN="+bin, "OUT="+out, "SEED=3",
		"SFT_STEPS=0", "ROUNDS=1", "RL_GROUPS=2", "GSIZE=2", "EVAL_EPISODES=2", "EVAL_SPLIT=val")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	if err := cmd.Run(); err != nil {
		t.Fatalf("demo.sh with OUT=%q: %v\n%s", out, err, stdout.String())
	}
	html, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatalf("demo.sh did not end with a report: %v", err)
	}
	for _, frag := range []string{"<th>base T=0</th>", "<th>rl T=1</th>"} {
		if !strings.Contains(string(html), frag) {
			t.Errorf("the report lacks the evaluation %q", frag)
		}
	}
}

// checkoutElsewhere copies the pipeline scripts into a checkout whose path
// holds a blank (".../my projects/hone", its bin/ built) and returns that
// checkout and an empty working folder outside it.
func checkoutElsewhere(ctx context.Context, t *testing.T, root string) (checkout, work string) {
	t.Helper()
	checkout = filepath.Join(t.TempDir(), "my projects", "hone")
	buildBinaries(ctx, t, root, filepath.Join(checkout, "bin"))
	if err := os.MkdirAll(filepath.Join(checkout, "pipelines"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"demo.sh", "tictactoe.sh"} {
		script, err := os.ReadFile(filepath.Join(root, "pipelines", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(checkout, "pipelines", name), script, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return checkout, t.TempDir()
}

// envWithout is the test's environment less the variable name.
func envWithout(name string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, name+"=") {
			env = append(env, kv)
		}
	}
	return env
}

// TestDemoFromAnotherFolder runs demo.sh of a checkout whose path holds a
// blank ("my projects/hone", bin/ built in it) from another working
// folder, BIN unset and OUT relative: the script finds the checkout's
// binaries and writes under the working folder. It used to look for
// ./bin only, and stopped with "bin/hone-train missing; run make build"
// after the user had run it.
func TestDemoFromAnotherFolder(t *testing.T) {
	ctx, root, _ := loopSetup(t)
	checkout, work := checkoutElsewhere(ctx, t, root)
	cmd := scriptCmd(ctx, t, filepath.Join(checkout, "pipelines", "demo.sh"))
	cmd.Dir = work
	cmd.Env = append(envWithout("BIN"), "OUT=out demo", "SEED=3",
		"SFT_STEPS=0", "ROUNDS=1", "RL_GROUPS=2", "GSIZE=2", "EVAL_EPISODES=2", "EVAL_SPLIT=val")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s run from %s: %v\n%s", cmd.Path, work, err, stdout.String())
	}
	for _, p := range []string{"summary.json", "report.html"} {
		if _, err := os.Stat(filepath.Join(work, "out demo", p)); err != nil {
			t.Errorf("demo.sh from another folder: %v", err)
		}
	}
}

// TestTictactoeFromAnotherFolder: the same for tictactoe.sh, which plays
// the scripted policies with the binaries after demo.sh; it too looked
// for ./bin only.
func TestTictactoeFromAnotherFolder(t *testing.T) {
	ctx, root, _ := loopSetup(t)
	checkout, work := checkoutElsewhere(ctx, t, root)
	cmd := scriptCmd(ctx, t, filepath.Join(checkout, "pipelines", "tictactoe.sh"))
	cmd.Dir = work
	cmd.Env = append(envWithout("BIN"), "OUT=out ttt", "SEED=3",
		"SFT_STEPS=2", "ROUNDS=1", "RL_GROUPS=2", "GSIZE=2", "EVAL_EPISODES=2", "EVAL_SPLIT=val")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s run from %s: %v\n%s", cmd.Path, work, err, stdout.String())
	}
	b, err := os.ReadFile(filepath.Join(work, "out ttt", "summary.json"))
	if err != nil || !strings.Contains(string(b), `"scripted"`) {
		t.Errorf("tictactoe.sh from another folder: summary without the scripted policies: %v\n%s", err, b)
	}
}

// TestScriptsThroughSymlink runs demo.sh and tictactoe.sh through a link
// to the script alone (as a user puts one in ~/bin), BIN unset, from a
// folder without bin/: each finds its checkout's binaries (and
// tictactoe.sh its demo.sh) where the script's file is, not where the
// link is. They looked next to the link and stopped with "bin/hone-train
// missing; run make build".
func TestScriptsThroughSymlink(t *testing.T) {
	ctx, root, _ := loopSetup(t)
	checkout, work := checkoutElsewhere(ctx, t, root)
	links := filepath.Join(t.TempDir(), "my bin")
	if err := os.MkdirAll(links, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ script, link string }{
		{"demo.sh", "hone-demo"},
		// A relative link, resolved from the link's folder.
		{"tictactoe.sh", "hone-tictactoe"},
	} {
		target := filepath.Join(checkout, "pipelines", tc.script)
		if tc.link == "hone-tictactoe" {
			rel, err := filepath.Rel(links, target)
			if err != nil {
				t.Fatal(err)
			}
			target = rel
		}
		link := filepath.Join(links, tc.link)
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		out := "out " + tc.link
		cmd := scriptCmd(ctx, t, link)
		cmd.Dir = work
		cmd.Env = append(envWithout("BIN"), "OUT="+out, "SEED=3",
			"SFT_STEPS=0", "ROUNDS=1", "RL_GROUPS=2", "GSIZE=2", "EVAL_EPISODES=2", "EVAL_SPLIT=val")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s (a link to %s) run from %s: %v\n%s", link, tc.script, work, err, b)
			continue
		}
		if _, err := os.Stat(filepath.Join(work, out, "summary.json")); err != nil {
			t.Errorf("%s: %v", tc.link, err)
		}
	}
}

// TestTictactoeNoWarmup runs tictactoe.sh with SFT_STEPS=0, a knob it
// takes from demo.sh: with no warm-up there is no teacher row to compare
// RL with, so summary.json has null teacher figures and the RL and
// scripted ones. The summary step used to fail on the missing rows (jq:
// "null (null) and null (null) cannot be multiplied", exit 5) after the
// whole run had trained and evaluated.
func TestTictactoeNoWarmup(t *testing.T) {
	ctx, root, bin := loopSetup(t)
	out := filepath.Join(t.TempDir(), "ttt")
	cmd := scriptCmd(ctx, t, "./pipelines/tictactoe.sh")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "BIN="+bin, "OUT="+out, "SEED=3",
		"SFT_STEPS=0", "ROUNDS=1", "RL_GROUPS=2", "GSIZE=2", "EVAL_EPISODES=2", "EVAL_SPLIT=val")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	if err := cmd.Run(); err != nil {
		t.Fatalf("tictactoe.sh with SFT_STEPS=0: %v\n%s", err, stdout.String())
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("summary.json: %v\n%s", err, b)
	}
	if s["teacher_t1"] != nil || s["rl_t1"] == nil || s["rl_greedy"] == nil || s["scripted"] == nil {
		t.Errorf("summary.json without a warm-up: want teacher_t1 null, rl_t1, rl_greedy and scripted set:\n%s", b)
	}
}

// TestMakeDemoOutWithBlank runs the demo's make target as `make pipeline
// OUT=...` does, with an OUT holding a blank: the run writes there. The
// recipe used to put OUT=$(OUT) before the script unquoted, so the shell
// took the name's second word for the command to run.
func TestMakeDemoOutWithBlank(t *testing.T) {
	ctx, root, bin := loopSetup(t)
	need(t, "make")
	out := filepath.Join(t.TempDir(), "my run")
	cmd := scriptCmd(ctx, t, "make", "-s", "-f", "pipelines/demo.mk", "demo", "OUT="+out)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "BIN="+bin, "SEED=3",
		"SFT_STEPS=0", "ROUNDS=1", "RL_GROUPS=2", "GSIZE=2", "EVAL_EPISODES=2", "EVAL_SPLIT=val")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	if err := cmd.Run(); err != nil {
		t.Fatalf("make -f pipelines/demo.mk demo OUT=%q: %v\n%s", out, err, stdout.String())
	}
	if _, err := os.Stat(filepath.Join(out, "summary.json")); err != nil {
		t.Errorf("the demo did not write to OUT: %v\n%s", err, stdout.String())
	}
}

// TestDemoFailedStageSaysWhy: a stage that fails (here hone-score, on a
// formula that does not parse) stops the run with that stage's exit
// status and, on the terminal, its name and the end of the log its
// messages went to. The run used to stop with no word after "6/7 GRPO",
// the reason left in OUT/scored/score.log for the user to find.
func TestDemoFailedStageSaysWhy(t *testing.T) {
	ctx, root, bin := loopSetup(t)
	out := filepath.Join(t.TempDir(), "demo")
	cmd := scriptCmd(ctx, t, "./pipelines/demo.sh")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "BIN="+bin, "OUT="+out, "SCORERS=formula:env +* 2",
		"SFT_STEPS=0", "ROUNDS=1", "RL_GROUPS=2", "GSIZE=2", "EVAL_EPISODES=2", "EVAL_SPLIT=val")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("demo.sh with a bad formula: %v, want hone-score's exit 2\n%s%s", err, stdout.String(), stderr.String())
	}
	for _, want := range []string{"hone-score failed (exit 2)", filepath.Join(out, "scored", "score.log"), "does not parse"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr.String())
		}
	}
}

// pathWithout is a PATH of one folder holding links to every program on
// the test's PATH except the named ones, as on a machine without them.
func pathWithout(t *testing.T, missing ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if contains(missing, e.Name()) {
				continue
			}
			link := filepath.Join(dir, e.Name())
			if _, err := os.Lstat(link); err == nil {
				continue // an earlier PATH folder's program of that name wins
			}
			if err := os.Symlink(filepath.Join(d, e.Name()), link); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestDemoNeedsCurl: on a machine without curl (demo.mk lists it among
// what the demo needs) demo.sh stops at once with exit 2, naming it. It
// used to start the server, poll it with curl for two minutes, and then
// say "model base never appeared; see OUT/serve.log", a log with nothing
// wrong in it.
func TestDemoNeedsCurl(t *testing.T) {
	ctx, root, bin := loopSetup(t)
	out := filepath.Join(t.TempDir(), "demo")
	cmd := scriptCmd(ctx, t, "./pipelines/demo.sh")
	cmd.Dir = root
	cmd.Env = append(envWithout("PATH"), "PATH="+pathWithout(t, "curl"), "BIN="+bin, "OUT="+out,
		"SFT_STEPS=0", "ROUNDS=1", "RL_GROUPS=2", "GSIZE=2", "EVAL_EPISODES=2", "EVAL_SPLIT=val")
	b, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(b), "curl") {
		t.Fatalf("demo.sh without curl: %v, want exit 2 naming curl\n%s", err, b)
	}
	if _, err := os.Stat(filepath.Join(out, "serve.log")); err == nil {
		t.Errorf("demo.sh started the server before it found curl missing")
	}
}

// TestTictactoeScriptedFailureSaysWhy: when hone-collect fails on the
// scripted policies' games that tictactoe.sh plays after demo.sh (here a
// hone-collect that refuses them, in front of the real one), the script
// stops with its exit status, naming the step and showing the end of its
// log. It used to stop with no word, the reason in OUT/eval/collect.log.
func TestTictactoeScriptedFailureSaysWhy(t *testing.T) {
	ctx, root, bin := loopSetup(t)
	wrapped := refusingBin(t, bin, "hone-collect", "*scripted:blocker*", 3)
	stdout, stderr, err := tinyRun(ctx, t, root, "./pipelines/tictactoe.sh", wrapped, "SEED=3")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("tictactoe.sh with the scripted blocker refused: %v, want hone-collect's exit 3\n%s%s", err, stdout, stderr)
	}
	for _, want := range []string{"scripted:blocker", "refused by the test"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
}

// refusingBin is a folder of the stage binaries of bin in which name is a
// wrapper that refuses a call whose arguments match the shell pattern
// with exit status code, saying "NAME: refused by the test", and runs
// the real one otherwise.
func refusingBin(t *testing.T, bin, name, pattern string, code int) string {
	t.Helper()
	wrapped := t.TempDir()
	for _, n := range stageBinaries {
		if n != name {
			if err := os.Symlink(filepath.Join(bin, n), filepath.Join(wrapped, n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	wrapper := fmt.Sprintf("#!/bin/sh\ncase \"$*\" in %s) echo '%s: refused by the test' >&2; exit %d ;; esac\nexec '%s' \"$@\"\n",
		pattern, name, code, filepath.Join(bin, name))
	if err := os.WriteFile(filepath.Join(wrapped, name), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	return wrapped
}

// tinyRun runs script (demo.sh or tictactoe.sh) at the tests' tiny size
// (no warm-up, one round of two groups of two, two episodes an
// evaluation) with the binaries of bin, into a fresh OUT, with the
// variables of extra too, and returns what it wrote and how it ended.
func tinyRun(ctx context.Context, t *testing.T, root, script, bin string, extra ...string) (stdout, stderr string, err error) {
	t.Helper()
	return tinyRunInto(ctx, t, root, script, bin, filepath.Join(t.TempDir(), "out"), extra...)
}

// tinyRunInto is tinyRun with OUT=out.
func tinyRunInto(ctx context.Context, t *testing.T, root, script, bin, out string, extra ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := scriptCmd(ctx, t, script)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "BIN="+bin, "OUT="+out,
		"SFT_STEPS=0", "ROUNDS=1", "RL_GROUPS=2", "GSIZE=2", "EVAL_EPISODES=2", "EVAL_SPLIT=val")
	cmd.Env = append(cmd.Env, extra...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// TestMakePipelineUnknownDemo: a DEMO that names no demo (a typo of
// tictactoe) stops make pipeline with exit 2, naming it and the demos
// there are, before anything is built; it ran the guess demo in its place.
// Under make -j2 too: the check and the build were two prerequisites of
// pipeline, which -j2 ran side by side, so the typo came after a build of
// every binary.
func TestMakePipelineUnknownDemo(t *testing.T) {
	_, root, _ := loopSetup(t)
	need(t, "make")
	for _, jobs := range []string{"-j1", "-j2"} {
		bin := t.TempDir()
		cmd := exec.Command("make", "-s", jobs, "pipeline", "DEMO=tictactoo", "BIN="+bin)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Fatalf("make %s pipeline DEMO=tictactoo: %v, want exit 2\n%s", jobs, err, out)
		}
		if !strings.Contains(string(out), "unknown DEMO=tictactoo") || !strings.Contains(string(out), "tictactoe") {
			t.Errorf("make %s pipeline DEMO=tictactoo does not name the value and the demos:\n%s", jobs, out)
		}
		if built, _ := os.ReadDir(bin); len(built) > 0 {
			t.Errorf("make %s pipeline DEMO=tictactoo built %d binaries before it stopped", jobs, len(built))
		}
	}
}

// TestDemoReadFailureSaysWhy: hone-inspect to-jsonl failing on an
// evaluation file stops demo.sh with its exit status, naming it and
// showing what it said. Its stderr went to /dev/null, so the run stopped
// without a word (reading the evaluation), or, in the metric check (run
// inside an && list, where set -e does not hold), went on to say that the
// episodes report no metrics.
func TestDemoReadFailureSaysWhy(t *testing.T) {
	ctx, root, bin := loopSetup(t)
	for _, file := range []string{"base-T0", "base-T1"} {
		wrapped := refusingBin(t, bin, "hone-inspect", "*to-jsonl*"+file+".parquet*", 4)
		stdout, stderr, err := tinyRun(ctx, t, root, "./pipelines/demo.sh", wrapped)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 4 {
			t.Fatalf("demo.sh with to-jsonl of %s refused: %v, want hone-inspect's exit 4\n%s%s", file, err, stdout, stderr)
		}
		for _, want := range []string{"hone-inspect failed (exit 4)", "refused by the test"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%s: stderr does not say %q:\n%s", file, want, stderr)
			}
		}
	}
}

// TestTictactoeReadFailureSaysWhy: hone-inspect to-jsonl failing on the
// scripted policies' games that tictactoe.sh reads after demo.sh stops the
// script with its exit status, naming it and showing what it said. Its
// stderr went to /dev/null and its output through a pipe into jq, so the
// script stopped without a word, with jq's exit status on the empty input.
func TestTictactoeReadFailureSaysWhy(t *testing.T) {
	ctx, root, bin := loopSetup(t)
	wrapped := refusingBin(t, bin, "hone-inspect", "*to-jsonl*scripted-*.parquet*", 4)
	stdout, stderr, err := tinyRun(ctx, t, root, "./pipelines/tictactoe.sh", wrapped, "SEED=3")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 4 {
		t.Fatalf("tictactoe.sh with to-jsonl of the scripted games refused: %v, want hone-inspect's exit 4\n%s%s", err, stdout, stderr)
	}
	for _, want := range []string{"hone-inspect to-jsonl", "failed (exit 4)", "scripted-teacher.parquet", "refused by the test"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
}

// leftBehind lists the processes, other than this test's, that still run
// for a demo run: those in the process group pgid and those whose command
// line names out (the run's folder, in every stage's and the server's
// arguments), each as "pid command line".
func leftBehind(pgid int, out string) []string {
	var left []string
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, stat := range stats {
		dir := filepath.Dir(stat)
		pid, err := strconv.Atoi(filepath.Base(dir))
		if err != nil || pid == os.Getpid() {
			continue
		}
		c, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil {
			continue // gone meanwhile
		}
		inGroup := false
		if s, err := os.ReadFile(stat); err == nil {
			// The fields after the command's name, in parentheses that
			// may hold blanks: state, ppid, pgrp.
			if i := bytes.LastIndexByte(s, ')'); i >= 0 {
				f := strings.Fields(string(s[i+1:]))
				inGroup = len(f) > 2 && f[2] == strconv.Itoa(pgid)
			}
		}
		if inGroup || bytes.Contains(c, []byte(out)) {
			left = append(left, fmt.Sprintf("%d %s", pid, bytes.ReplaceAll(c, []byte{0}, []byte{' '})))
		}
	}
	return left
}

// TestDemoCancelLeavesNothing: a demo run stopped by its test's context
// (the test's timeout, here a cancel once the GRPO rounds run) stops
// whole: the script, its background hone-serve and the stage running.
// The tests started the script with Go's default, SIGKILL to the script
// alone, which left the server and the stage running on the machine.
func TestDemoCancelLeavesNothing(t *testing.T) {
	ctx, root, bin := loopSetup(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := filepath.Join(t.TempDir(), "demo")
	cmd := scriptCmd(ctx, t, "./pipelines/demo.sh")
	cmd.Dir = root
	// Rounds enough that the run is still in them when cancelled.
	cmd.Env = append(os.Environ(), "BIN="+bin, "OUT="+out,
		"SFT_STEPS=0", "ROUNDS=1000", "RL_GROUPS=2", "GSIZE=2", "EVAL_EPISODES=2", "EVAL_SPLIT=val")
	var said waitfor.Buffer
	cmd.Stdout, cmd.Stderr = &said, &said
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() {
		// What a failed check found is stopped, not left to the machine.
		for _, p := range leftBehind(pgid, out) {
			if pid, err := strconv.Atoi(strings.Fields(p)[0]); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	waitfor.Until(t, 2*time.Minute, "the demo's first GRPO round", func() bool {
		return strings.Contains(said.String(), "round 1:")
	})
	cancel()
	if err := <-waited; err == nil {
		t.Fatalf("demo.sh cancelled in its rounds exited 0:\n%s", said.String())
	}
	var left []string
	if !waitfor.Within(15*time.Second, func() bool {
		left = leftBehind(pgid, out)
		return len(left) == 0 && errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
	}) {
		t.Fatalf("processes of the cancelled demo run still running:\n%s\nthe run said:\n%s", strings.Join(left, "\n"), said.String())
	}
}

// TestDemoRefusesBadKnobs: a knob that must be a whole number and is not
// (a typo, a negative, 0 rounds) stops demo.sh with exit 2 naming it,
// before anything is written. SFT_STEPS=3OO skipped the warm-up without a
// word (the failed `-gt` test read as false), and ROUNDS=0 trained nothing
// and then failed evaluating a step no round wrote. SEED=x failed with
// bash's "x: unbound variable" (exit 1): the held-out seed was computed
// from it before the check. A ten-digit number is refused saying the
// range, not as "not a whole number".
func TestDemoRefusesBadKnobs(t *testing.T) {
	ctx, root, bin := loopSetup(t)
	for _, knob := range []string{"SFT_STEPS=3OO", "ROUNDS=0", "GSIZE=-2", "SEED=08", "SEED=x", "EVAL_EPISODES=two", "THREADS=1.5", "SEED=1234567890", "WARMUP_EPISODES=4k"} {
		out := filepath.Join(t.TempDir(), "demo")
		stdout, stderr, err := tinyRunInto(ctx, t, root, "./pipelines/demo.sh", bin, out, knob)
		var ee *exec.ExitError
		name := strings.SplitN(knob, "=", 2)[0]
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr, name+"=") {
			t.Errorf("demo.sh with %s: %v, want exit 2 naming %s\n%s%s", knob, err, name, stdout, stderr)
		}
		if !strings.Contains(stderr, "to 999999999") {
			t.Errorf("demo.sh with %s: the refusal does not say the range:\n%s", knob, stderr)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("demo.sh with %s wrote %s before it refused", knob, out)
		}
	}
}

// TestDemoNTurnsOnlyWithDefaultEnvOpts: N and TURNS reach the game only
// through ENV_OPTS' default, so with an ENV_OPTS of its own the run goes
// on whatever they hold; demo.sh refused N=0 or TURNS=many there, over
// values the run never read. Without ENV_OPTS they are still checked.
func TestDemoNTurnsOnlyWithDefaultEnvOpts(t *testing.T) {
	ctx, root, bin := loopSetup(t)
	stdout, stderr, err := tinyRun(ctx, t, root, "./pipelines/demo.sh", bin, "ENV_OPTS=n=8;turns=3", "N=0", "TURNS=many")
	if err != nil || !strings.Contains(stdout, "(n=8;turns=3)") {
		t.Errorf("demo.sh with ENV_OPTS of its own and N=0 TURNS=many: %v, want a run with n=8;turns=3\n%s%s", err, stdout, stderr)
	}
	for _, knob := range []string{"N=0", "TURNS=many"} {
		out := filepath.Join(t.TempDir(), "demo")
		stdout, stderr, err := tinyRunInto(ctx, t, root, "./pipelines/demo.sh", bin, out, knob)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr, knob) {
			t.Errorf("demo.sh with %s and the default ENV_OPTS: %v, want exit 2 naming it\n%s%s", knob, err, stdout, stderr)
		}
	}
}

// TestDemoWarmupTemplateCheckedFirst: a warm-up policy whose rows the
// model's chat template cannot lay out (the stdio example's calculator
// policy calls a tool; the tiny model's template has no tool-call format)
// stops demo.sh with exit 2 and hone-train sft's reason before the
// warm-up's 4000 episodes are collected. They were collected first
// (minutes), and only then did sft refuse row 0. The 4000-episode
// collection is refused here (exit 4), so that reaching it fails fast.
func TestDemoWarmupTemplateCheckedFirst(t *testing.T) {
	ctx, root, bin := loopSetup(t)
	wrapped := refusingBin(t, bin, "hone-collect", "*--groups\\ 4000*", 4)
	env := filepath.Join(root, "pipelines", "stdio-env-example", "env.py")
	stdout, stderr, err := tinyRun(ctx, t, root, "./pipelines/demo.sh", wrapped,
		"ENV=stdio", "ENV_OPTS=cmd=python3 -S "+env, "WARMUP_POLICY=calculator", "SFT_STEPS=2")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr, "no tool-call format") || !strings.Contains(stderr, "WARMUP_POLICY=calculator") {
		t.Fatalf("demo.sh with a warm-up the template cannot lay out: %v, want exit 2 naming WARMUP_POLICY and the template's lack\n%s%s", err, stdout, stderr)
	}
}

// TestDemoWarmupEpisodes: WARMUP_EPISODES sets how many scripted episodes
// the SFT warm-up imitates. The count was fixed at 4000, which a stdio
// program (two processes an episode, tens of milliseconds each) took about
// 14 minutes to play on 2 cores, before a loop a user only wanted to try.
func TestDemoWarmupEpisodes(t *testing.T) {
	ctx, root, bin := loopSetup(t)
	out := filepath.Join(t.TempDir(), "demo")
	stdout, stderr, err := tinyRunInto(ctx, t, root, "./pipelines/demo.sh", bin, out, "SFT_STEPS=2", "WARMUP_EPISODES=40")
	if err != nil {
		t.Fatalf("demo.sh with WARMUP_EPISODES=40: %v\n%s%s", err, stdout, stderr)
	}
	st, err := exec.CommandContext(ctx, filepath.Join(bin, "hone-inspect"), "stats", "--json", filepath.Join(out, "data", "warmup.parquet")).Output()
	if err != nil {
		t.Fatalf("hone-inspect stats on the warm-up data: %v", err)
	}
	var s struct {
		Trajectories int `json:"trajectories"`
	}
	if err := json.Unmarshal(st, &s); err != nil {
		t.Fatalf("stats: %v\n%s", err, st)
	}
	if s.Trajectories != 40 {
		t.Errorf("the warm-up data holds %d episodes, want the 40 WARMUP_EPISODES asks for", s.Trajectories)
	}
}

// TestDemoKeepsAFolderItDidNotWrite: OUT naming a folder of the user's
// stops demo.sh with exit 2 and leaves the folder as it was; the script
// removed any OUT whole before writing into it.
func TestDemoKeepsAFolderItDidNotWrite(t *testing.T) {
	ctx, root, bin := loopSetup(t)
	out := t.TempDir()
	precious := filepath.Join(out, "notes.txt")
	if err := os.WriteFile(precious, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := tinyRunInto(ctx, t, root, "./pipelines/demo.sh", bin, out)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr, "OUT="+out) {
		t.Errorf("demo.sh into a folder of the user's: %v, want exit 2 naming OUT\n%s%s", err, stdout, stderr)
	}
	if b, err := os.ReadFile(precious); err != nil || string(b) != "mine" {
		t.Errorf("the user's file after demo.sh: %q, %v", b, err)
	}
}

// TestDemoOutStartingWithDash runs demo.sh into a relative OUT that starts
// with "-" and holds an earlier run's output: the run replaces it and ends
// with its report. The name reached rm and the stages as an option.
func TestDemoOutStartingWithDash(t *testing.T) {
	ctx, root, bin := loopSetup(t)
	work := t.TempDir()
	old := filepath.Join(work, "-o demo")
	if err := os.MkdirAll(old, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{".hone-demo": "an earlier run", "stale.txt": "old"} {
		if err := os.WriteFile(filepath.Join(old, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := scriptCmd(ctx, t, filepath.Join(root, "pipelines", "demo.sh"))
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "BIN="+bin, "OUT=-o demo", "SEED=3",
		"SFT_STEPS=0", "ROUNDS=1", "RL_GROUPS=2", "GSIZE=2", "EVAL_EPISODES=2", "EVAL_SPLIT=val")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo.sh with OUT=\"-o demo\": %v\n%s", err, b)
	}
	if _, err := os.Stat(filepath.Join(old, "report.html")); err != nil {
		t.Errorf("demo.sh did not end with a report in OUT: %v", err)
	}
	if _, err := os.Stat(filepath.Join(old, "stale.txt")); err == nil {
		t.Errorf("the earlier run's file is still in OUT: the run did not start fresh")
	}
}

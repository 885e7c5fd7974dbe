package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/train/checkpoint"
	"github.com/hone-rl/hone/train/tinymodel"
)

// TestMain lets the test binary stand in for the hone-train binary (for
// the cron script test): run as HONE_TRAIN_TEST_MAIN=1 it is main.
func TestMain(m *testing.M) {
	if os.Getenv("HONE_TRAIN_TEST_MAIN") != "" {
		main()
		return
	}
	os.Exit(m.Run())
}

// scoredFixture writes a tiny model and one scored file of 2 groups × 3
// into watch.
func scoredFixture(t *testing.T, dir, watch, name string) string {
	t.Helper()
	md := filepath.Join(dir, "model")
	if _, err := os.Stat(md); err != nil {
		if err := tinymodel.Write(context.Background(), md, tinymodel.Options{Hidden: 32, Layers: 2, Heads: 4, KVHeads: 2}, ref.New()); err != nil {
			t.Fatal(err)
		}
	}
	var gs []trajectory.Group
	for g := range 2 {
		grp := trajectory.Group{ID: fmt.Sprintf("%s-%d", name, g)}
		for i := range 3 {
			ids := []int32{'m', 'v', '0' + int32(i), 258} // byte tokens, then <|im_end|>
			grp.Trajectories = append(grp.Trajectories, trajectory.Trajectory{
				ID: fmt.Sprintf("%s-%d-%d", name, g, i), GroupID: grp.ID, Reward: trajectory.Float64(float64(i)),
				Messages: []trajectory.Message{
					{Role: "user", Content: "go"},
					{Role: "assistant", Content: fmt.Sprintf("mv%d", i), Trainable: true, TokenIDs: ids, Logprobs: []float32{-1, -1, -1, -1}, FinishReason: "stop"},
				},
			})
		}
		gs = append(gs, grp)
	}
	if err := os.MkdirAll(watch, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := trajectory.WriteFile(context.Background(), filepath.Join(watch, name+".parquet"), gs, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	return md
}

// TestCronScriptTwiceTrainsOnce runs pipelines/cron/hone-train-cron.sh twice
// with this test binary as hone-train: the first call trains one step, the
// second finds nothing new and leaves the run as it was.
func TestCronScriptTwiceTrainsOnce(t *testing.T) {
	dir := t.TempDir()
	watch := filepath.Join(dir, "scored")
	md := scoredFixture(t, dir, watch, "r1")
	script, err := filepath.Abs("../../pipelines/cron/hone-train-cron.sh")
	if err != nil {
		t.Fatal(err)
	}
	run := func() string {
		cmd := exec.Command("sh", script)
		cmd.Env = append(os.Environ(),
			"HONE_TRAIN_TEST_MAIN=1", "HONE_TRAIN="+os.Args[0], "HONE_MODEL="+md, "HONE_SCORED="+watch,
			"HONE_ADAPTERS="+filepath.Join(dir, "adapters"), "HONE_RUN=cron", "HONE_TRAIN_FLAGS=--rank 2 --threads 1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("cron script: %v\n%s", err, out)
		}
		return string(out)
	}
	ck := &checkpoint.Run{Dir: filepath.Join(dir, "adapters", "cron")}
	run()
	first, ok, err := ck.Latest()
	if err != nil || !ok || first != 1 {
		t.Fatalf("after the first call: latest %d %v %v, want step 1", first, ok, err)
	}
	before, _ := os.ReadFile(filepath.Join(ck.Dir, runfolder.MetricsName))
	out := run()
	after, _ := os.ReadFile(filepath.Join(ck.Dir, runfolder.MetricsName))
	if n, _, _ := ck.Latest(); n != 1 || !strings.Contains(out, "nothing new") || !bytes.Equal(before, after) {
		t.Fatalf("second call trained again: latest %d, output %q", n, out)
	}
}

// TestCronScriptLockedRunExits1: while another call trains (it holds
// OUT/RUN/lock), pipelines/cron/hone-train-cron.sh fails at once, exit 1,
// saying the run is held by another process, and changes nothing in the
// run folder, as pipelines/cron/README.md and the script's comment say.
func TestCronScriptLockedRunExits1(t *testing.T) {
	dir := t.TempDir()
	watch := filepath.Join(dir, "scored")
	md := scoredFixture(t, dir, watch, "r1")
	script, err := filepath.Abs("../../pipelines/cron/hone-train-cron.sh")
	if err != nil {
		t.Fatal(err)
	}
	ck := &checkpoint.Run{Dir: filepath.Join(dir, "adapters", "cron")}
	if err := os.MkdirAll(ck.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	unlock, err := ck.Lock()
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	cmd := exec.Command("sh", script)
	cmd.Env = append(os.Environ(),
		"HONE_TRAIN_TEST_MAIN=1", "HONE_TRAIN="+os.Args[0], "HONE_MODEL="+md, "HONE_SCORED="+watch,
		"HONE_ADAPTERS="+filepath.Join(dir, "adapters"), "HONE_RUN=cron", "HONE_TRAIN_FLAGS=--rank 2 --threads 1")
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(out), "held by another process") {
		t.Fatalf("cron script on a locked run: exit %d, want 1 saying it is held by another process:\n%s", code, out)
	}
	ents, err := os.ReadDir(ck.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != "lock" {
			t.Errorf("the locked call left %s in the run folder", e.Name())
		}
	}
}

// TestCronScriptFlagsNotGlobbed: HONE_TRAIN_FLAGS is split into words and
// each word passed as written: a value with a glob character is not
// replaced by the names of files in the working folder that match it (the
// shell expanded it, so the flag got a file's name).
func TestCronScriptFlagsNotGlobbed(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "eval_reward"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs("../../pipelines/cron/hone-train-cron.sh")
	if err != nil {
		t.Fatal(err)
	}
	echo, err := exec.LookPath("echo")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HONE_TRAIN="+echo, "HONE_MODEL=m", "HONE_SCORED=s", "HONE_TRAIN_FLAGS=--best-metric eval_*  --lr 1e-5")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cron script: %v\n%s", err, out)
	}
	if !strings.HasSuffix(strings.TrimSpace(string(out)), "--best-metric eval_* --lr 1e-5") {
		t.Errorf("the command ran as %q, want its flags ending --best-metric eval_* --lr 1e-5", out)
	}
}

func TestTrainUsage(t *testing.T) {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	in := filepath.Join(dir, "s", "a.parquet")
	for _, args := range [][]string{
		{"grpo", in},                          // no --model
		{"grpo", "--model", md, in},           // no --run
		{"grpo", "--model", md, "--run", "x"}, // no inputs
		{"grpo", "--model", md, "--run", "x", "--loss", "reinforce", in},
		{"grpo", "--model", md, "--run", "x", "--scale-rewards", "zscore", in},
		{"grpo", "--model", md, "--run", "x", "--norm", "constant", "--norm-constant", "0", in},
		{"sft", "--model", md, "--run", "x", "--turns", "first", in},
		{"sft", "--model", md, "--run", "x", "--lr-schedule", "linear", in},
		{"grpo", "--model", md, "--run", "x", "--dtype", "int8", in},
	} {
		var out bytes.Buffer
		err := cli.ExecuteCommand(context.Background(), newRootCmd(&out, &out), args)
		if cli.ExitCode(err) != cli.ExitUsage {
			t.Errorf("%v: exit %d (%v), want usage", args, cli.ExitCode(err), err)
		}
	}
	// A run name hone-serve cannot serve (or that is a path) is refused
	// before anything is written; before, it trained into OUT/RUN.
	adapters := filepath.Join(dir, "adapters")
	for _, run := range []string{"my run", "../escape", "a/b", "r@1", ".hidden"} {
		var out bytes.Buffer
		args := []string{"grpo", "--model", md, "--run", run, "--out", adapters, "--rank", "2", "--threads", "1", in}
		err := cli.ExecuteCommand(context.Background(), newRootCmd(&out, &out), args)
		if cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(fmt.Sprint(err), "is not a run name") {
			t.Errorf("--run %q: exit %d (%v), want usage saying it is not a run name", run, cli.ExitCode(err), err)
		}
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 2 { // the model and s
		t.Errorf("refused runs left %v behind (%v)", ents, err)
	}
	// A valid grpo call trains and reports each step.
	var out bytes.Buffer
	args := []string{"grpo", "--model", md, "--run", "ok", "--out", filepath.Join(dir, "adapters"), "--rank", "2", "--threads", "1", in}
	if err := cli.ExecuteCommand(context.Background(), newRootCmd(&out, &out), args); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "msg=step step=1 ") {
		t.Errorf("no step line in %q", out.String())
	}
}

// TestSFTThenGRPO runs the commands as the pipeline will: SFT on JSONL chat
// data, then GRPO starting from the SFT adapter.
func TestSFTThenGRPO(t *testing.T) {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	chats := filepath.Join(dir, "chats.jsonl")
	if err := os.WriteFile(chats, []byte(`{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":"mv1"}]}
{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":"mv2"}]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "adapters")
	var log bytes.Buffer
	exec := func(args ...string) {
		t.Helper()
		if err := cli.ExecuteCommand(context.Background(), newRootCmd(&log, &log), args); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, log.String())
		}
	}
	exec("sft", "--model", md, "--out", out, "--run", "warm", "--rank", "2", "--steps", "2", "--lr", "1e-3", "--threads", "1", chats)
	exec("grpo", "--model", md, "--out", out, "--run", "rl", "--init-adapter", filepath.Join(out, "warm", "step-000002"), "--threads", "1", filepath.Join(dir, "s"))
	ck := &checkpoint.Run{Dir: filepath.Join(out, "rl")}
	if n, ok, err := ck.Latest(); err != nil || !ok || n != 1 {
		t.Fatalf("grpo latest %d %v %v\n%s", n, ok, err, log.String())
	}
	cfg, err := ck.ReadConfig(1)
	if err != nil || !strings.Contains(string(cfg), `"init_adapter"`) {
		t.Errorf("saved config lacks init_adapter: %s %v", cfg, err)
	}
}

// TestGRPORounds runs hone-train as a process for three rounds of one run:
// round 2 without --resume is a usage error (exit 2); with --resume and the
// new file it trains on from the run's step; a changed --lr is refused
// (exit 2) naming only that option, and leaves the run as it was.
func TestGRPORounds(t *testing.T) {
	dir := t.TempDir()
	scored := filepath.Join(dir, "scored")
	md := scoredFixture(t, dir, scored, "r1")
	scoredFixture(t, dir, scored, "r2")
	out := filepath.Join(dir, "adapters")
	grpo := func(extra ...string) (int, string) {
		args := []string{"grpo", "--model", md, "--run", "rounds", "--out", out, "--rank", "2", "--threads", "1", "--lr", "1e-3"}
		return runMain(t, append(args, extra...)...)
	}
	if code, msg := grpo(filepath.Join(scored, "r1.parquet")); code != 0 {
		t.Fatalf("round 1: exit %d\n%s", code, msg)
	}
	r2 := filepath.Join(scored, "r2.parquet")
	if code, msg := grpo(r2); code != cli.ExitUsage || !strings.Contains(msg, "pass --resume") {
		t.Errorf("round 2 without --resume: exit %d, want %d saying --resume\n%s", code, cli.ExitUsage, msg)
	}
	code, msg := grpo("--resume", "--lr", "2e-3", r2)
	if code != cli.ExitUsage || !strings.Contains(msg, `option "lr" differs: run has 0.001, command gives 0.002`) ||
		strings.Contains(msg, "inputs") || strings.Count(msg, "differs") != 1 {
		t.Errorf("round 2 with another --lr: exit %d, want %d naming only lr\n%s", code, cli.ExitUsage, msg)
	}
	if code, msg := grpo("--resume", r2); code != 0 || !strings.Contains(msg, "new session of the run") {
		t.Fatalf("round 2: exit %d\n%s", code, msg)
	}
	ck := &checkpoint.Run{Dir: filepath.Join(out, "rounds")}
	if n, _, _ := ck.Latest(); n != 2 {
		t.Errorf("after round 2 latest is step %d, want 2", n)
	}
	st, err := ck.ReadState(2)
	if err != nil || st.OptimizerStep != 2 {
		t.Errorf("round 2's state %+v (%v): the optimizer did not carry over", st, err)
	}
	man, err := ck.ReadManifest()
	if err != nil || len(man.Sessions) != 2 || man.Sessions[1].Files[0].Path != r2 {
		t.Errorf("manifest sessions %+v, %v", man.Sessions, err)
	}
}

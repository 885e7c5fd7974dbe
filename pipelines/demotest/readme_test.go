package demotest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readmeRound returns the commands of the README's "A round by hand": the
// first ```sh block after the paragraph that starts with that phrase.
func readmeRound(t *testing.T, readme string) string {
	t.Helper()
	return readmeBlock(t, readme, "\nA round by hand")
}

// readmeBlock returns the first ```sh block of readme after the text
// after.
func readmeBlock(t *testing.T, readme, after string) string {
	t.Helper()
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), after)
	if !ok {
		t.Fatalf("%s has no %q", readme, after)
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	if !ok {
		t.Fatalf("%s: no ```sh block after %q", readme, after)
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatalf("%s: the block after %q is not closed", readme, after)
	}
	return block
}

// replaceOnce is s with old replaced by new, which must be there once: a
// README edit that removes it fails the test rather than leaving the
// block unshrunk or unchanged.
func replaceOnce(t *testing.T, s, old, new string) string {
	t.Helper()
	if n := strings.Count(s, old); n != 1 {
		t.Fatalf("the README's block holds %q %d times, want once; update this test:\n%s", old, n, s)
	}
	return strings.Replace(s, old, new, 1)
}

// freePort is a TCP port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestReadmeRoundByHand runs the README's round by hand as it is written,
// in a fresh folder whose bin/ holds the binaries just built: `make build`
// is left out (built here instead) and port 8000 becomes a free port.
// The rounds must move the mean reward: the last round's, sampled by the
// GRPO run, at least 0.3 above the first's, sampled by the warm-up.
func TestReadmeRoundByHand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every binary, warms a model up and runs 8 GRPO rounds (about a minute)")
	}
	need(t, "curl")
	need(t, "bash")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	block := readmeRound(t, filepath.Join(root, "README.md"))
	var script []string
	for _, line := range strings.Split(block, "\n") {
		if strings.TrimSpace(line) == "make build" {
			continue
		}
		script = append(script, line)
	}
	src := strings.Join(script, "\n")
	if !strings.Contains(src, "8000") {
		t.Fatalf("the README's round by hand no longer uses port 8000; update this test:\n%s", src)
	}
	src = strings.ReplaceAll(src, "8000", fmt.Sprint(freePort(t)))

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	work := t.TempDir()
	buildBinaries(ctx, t, root, filepath.Join(work, "bin"))
	// Stop on the first failing command, and never leave the server behind.
	src = "set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + src
	start := time.Now()
	cmd := scriptCmd(ctx, t, "bash", "-c", src)
	cmd.Dir = work
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the README's commands failed: %v\n%s", err, out.String())
	}
	t.Logf("the README's round by hand took %s", time.Since(start).Round(time.Second))

	mean := func(file string) float64 {
		t.Helper()
		b, err := exec.CommandContext(ctx, filepath.Join(work, "bin", "hone-inspect"), "stats", "--json", filepath.Join(work, file)).Output()
		if err != nil {
			t.Fatalf("hone-inspect stats %s: %v", file, err)
		}
		var s struct {
			Reward struct {
				Scored int      `json:"scored"`
				Mean   *float64 `json:"mean"`
			} `json:"reward"`
		}
		if err := json.Unmarshal(b, &s); err != nil || s.Reward.Mean == nil || s.Reward.Scored != 128 {
			t.Fatalf("stats of %s: %v\n%s", file, err, b)
		}
		return *s.Reward.Mean
	}
	var means []string
	for r := 1; r <= 8; r++ {
		means = append(means, fmt.Sprintf("%.2f", mean(fmt.Sprintf("out/r%d.scored.parquet", r))))
	}
	first, last := mean("out/r1.scored.parquet"), mean("out/r8.scored.parquet")
	t.Logf("mean reward by round: %s", strings.Join(means, " "))
	if last < first+0.3 {
		t.Errorf("mean reward %.3f in round 1, %.3f in round 8: want a rise of at least 0.3\n%s", first, last, out.String())
	}
	// The stats table the README ends on shows the reward by the model
	// that sampled: the warm-up's step 60, then steps 1..7 of the GRPO run.
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	models := map[string]bool{}
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 2 && f[0] == "model" {
			models[f[1]] = true
		}
	}
	for _, m := range []string{"warmup@60", "rl@1", "rl@7"} {
		if !models[m] {
			t.Errorf("the stats table has no row for model %s:\n%s", m, out.String())
		}
	}
	// Every round after the first was a new session of run "rl".
	b, err := os.ReadFile(filepath.Join(work, "out", "adapters", "rl", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var man struct {
		Sessions []struct {
			Index     int `json:"index"`
			StartStep int `json:"start_step"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal(b, &man); err != nil || len(man.Sessions) != 8 || man.Sessions[7].Index != 7 || man.Sessions[7].StartStep != 7 {
		t.Errorf("run rl's manifest: %v\n%s", err, b)
	}
}

// TestReadmeTicTacToeDemo runs the README's demo.sh block for tic-tac-toe
// ("The loop as a script") as written, its own variables included, at the
// tests' tiny sizes (given in the environment, which the block's own
// variables do not set): a short warm-up on the minimax player's games,
// one round, two held-out episodes. The block was run by no test: an
// environment option, policy, scorer or metric it names that the code
// does not have would have gone unnoticed.
func TestReadmeTicTacToeDemo(t *testing.T) {
	ctx, root, bin := loopSetup(t)
	need(t, "bash")
	block := readmeBlock(t, filepath.Join(root, "README.md"), "**The loop as a script.**")
	if !strings.Contains(block, "ENV=tictactoe") {
		t.Fatalf("the README's demo.sh block no longer runs tic-tac-toe; update this test:\n%s", block)
	}
	// The block names the script by its path from the checkout and writes
	// OUT under the current folder: run it in a folder of its own whose
	// pipelines/ is the checkout's.
	work := t.TempDir()
	if err := os.Symlink(filepath.Join(root, "pipelines"), filepath.Join(work, "pipelines")); err != nil {
		t.Fatal(err)
	}
	cmd := scriptCmd(ctx, t, "bash", "-c", "set -euo pipefail\n"+block)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "BIN="+bin,
		"SFT_STEPS=2", "ROUNDS=1", "RL_GROUPS=2", "GSIZE=2", "EVAL_EPISODES=2", "EVAL_SPLIT=val")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the README's tic-tac-toe demo failed: %v\n%s", err, out.String())
	}
	b, err := os.ReadFile(filepath.Join(work, "out", "ttt", "summary.json"))
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{`"win"`, `"illegal"`, `"draw"`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("summary.json names no %s:\n%s", want, b)
		}
	}
}

// TestReadmeValidationSplit runs the README's "Best step by a validation
// split" block where it says, in the round by hand's loop: its GRPO
// command in place of the loop's, and its held-out collect, log-eval and
// cat after the step is served. Sizes are shrunk to seconds (a 4-step
// warm-up of 200 games, 2 rounds of 4 groups, 8 held-out episodes); each
// shrink must find the text it changes. Each round's log-eval must record
// val/reward at its step, and best must name a step of the run.
func TestReadmeValidationSplit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every binary and runs two rounds")
	}
	need(t, "curl")
	need(t, "bash")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(root, "README.md")
	round := readmeRound(t, readme)
	val := strings.TrimSpace(readmeBlock(t, readme, "**Best step by a validation split.**"))
	lines := strings.SplitN(val, "\n", 4)
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "bin/hone-train grpo ") {
		t.Fatalf("the README's validation block no longer starts with its 3-line hone-train grpo; update this test:\n%s", val)
	}
	grpo, after := strings.Join(lines[:3], "\n"), lines[3]
	src := replaceOnce(t, round, "  bin/hone-train grpo --model out/tiny --run rl --out out/adapters --resume \\\n"+
		"      --init-adapter out/adapters/warmup/step-000060 --lr 5e-3 \"out/r$r.scored.parquet\"\n", grpo+"\n")
	src = replaceOnce(t, src, "# step r is served\n", "# step r is served\n"+after+"\n")
	src = strings.Join(withoutLine(strings.Split(src, "\n"), "make build"), "\n")
	src = replaceOnce(t, src, "--groups 2000", "--groups 200")
	src = replaceOnce(t, src, "--steps 60 --save-every 60", "--steps 4 --save-every 4")
	src = strings.ReplaceAll(src, "step-000060", "step-000004")
	src = replaceOnce(t, src, "for r in 1 2 3 4 5 6 7 8;", "for r in 1 2;")
	src = replaceOnce(t, src, "--groups 16 -G 8", "--groups 4 -G 4")
	src = replaceOnce(t, src, "--groups 64 -G 1", "--groups 8 -G 1")
	src = strings.ReplaceAll(src, "8000", fmt.Sprint(freePort(t)))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	work := t.TempDir()
	buildBinaries(ctx, t, root, filepath.Join(work, "bin"))
	src = "set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + src
	cmd := scriptCmd(ctx, t, "bash", "-c", src)
	cmd.Dir = work
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the README's validation commands failed: %v\n%s\nthe script:\n%s", err, out.String(), src)
	}
	b, err := os.ReadFile(filepath.Join(work, "out", "adapters", "rl", "eval.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	steps := map[float64]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("eval.jsonl: %v\n%s", err, b)
		}
		if _, ok := rec["val/reward"]; ok {
			if s, ok := rec["step"].(float64); ok {
				steps[s] = true
			}
		}
	}
	if !steps[1] || !steps[2] {
		t.Errorf("eval.jsonl records val/reward at steps %v, want 1 and 2:\n%s", steps, b)
	}
	best, err := os.ReadFile(filepath.Join(work, "out", "adapters", "rl", "best"))
	if err != nil || !strings.HasPrefix(strings.TrimSpace(string(best)), "step-") {
		t.Errorf("best: %q, %v", best, err)
	}
}

// withoutLine is lines without those that are del, spaces aside (the
// round by hand's make build, done by buildBinaries here).
func withoutLine(lines []string, del string) []string {
	var kept []string
	for _, l := range lines {
		if strings.TrimSpace(l) != del {
			kept = append(kept, l)
		}
	}
	return kept
}

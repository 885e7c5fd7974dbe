package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/parquet-go/parquet-go"
)

// runMain runs this test binary as hone-train (see TestMain) and returns
// its exit code and what it printed.
func runMain(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "HONE_TRAIN_TEST_MAIN=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, out.String()
}

// TestExitCodes runs hone-train as a process: a missing or broken model
// folder and input files that are not trajectory files, lack columns or
// lack rewards exit 2 naming the path and leave no run folder; a loss that
// goes NaN exits 1 saying so; a good run exits 0.
func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	good := filepath.Join(dir, "s", "a.parquet")

	broken := filepath.Join(dir, "broken-model")
	if err := os.CopyFS(broken, os.DirFS(md)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, "config.json"), []byte("{\"hidden_size\": 3"), 0o644); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.parquet")
	if err := os.WriteFile(garbage, []byte("PAR1 not really parquet PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	whole, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.parquet")
	if err := os.WriteFile(truncated, whole[:len(whole)-40], 0o644); err != nil {
		t.Fatal(err)
	}
	type thinRow struct {
		GroupID      string `parquet:"group_id"`
		TrajectoryID string `parquet:"trajectory_id"`
	}
	columns := filepath.Join(dir, "columns.parquet")
	if err := parquet.WriteFile(columns, []thinRow{{"g", "t"}}); err != nil {
		t.Fatal(err)
	}
	gs, err := trajectory.ReadFile(context.Background(), good)
	if err != nil {
		t.Fatal(err)
	}
	for g := range gs {
		for i := range gs[g].Trajectories {
			gs[g].Trajectories[i].Reward = nil
		}
	}
	unscored := filepath.Join(dir, "unscored.parquet")
	if err := trajectory.WriteFile(context.Background(), unscored, gs, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(dir, "adapters")
	common := []string{"--out", out, "--rank", "2", "--threads", "1"}
	for _, tc := range []struct {
		name string
		args []string
		code int
		says []string
	}{
		{"missing model", []string{"grpo", "--model", filepath.Join(dir, "nonexistent"), "--run", "m", good}, 2, []string{filepath.Join(dir, "nonexistent")}},
		{"broken config.json", []string{"grpo", "--model", broken, "--run", "b", good}, 2, []string{broken}},
		{"sft broken config.json", []string{"sft", "--model", broken, "--run", "b", good}, 2, []string{broken}},
		{"garbage parquet", []string{"grpo", "--model", md, "--run", "g", garbage}, 2, []string{garbage}},
		{"sft garbage parquet", []string{"sft", "--model", md, "--run", "g", garbage}, 2, []string{garbage}},
		{"truncated parquet", []string{"grpo", "--model", md, "--run", "t", truncated}, 2, []string{truncated}},
		{"missing columns", []string{"grpo", "--model", md, "--run", "c", columns}, 2, []string{columns, "missing"}},
		{"no reward", []string{"grpo", "--model", md, "--run", "u", unscored}, 2, []string{"6 trajectories have no reward", unscored + " row 0 (group a-0, trajectory a-0-0)"}},
		{"grpo lr 1e30", []string{"grpo", "--model", md, "--run", "nan", "--lr", "1e30", "--max-grad-norm", "0", "--steps", "4", good}, 1, []string{"not finite", "lower --lr"}},
		{"sft lr 1e30", []string{"sft", "--model", md, "--run", "snan", "--lr", "1e30", "--max-grad-norm", "0", "--steps", "4", "--batch-size", "2", good}, 1, []string{"not finite", "lower --lr"}},
		{"good", []string{"grpo", "--model", md, "--run", "ok", good}, 0, []string{"msg=step step=1 ", "msg=\"training done\""}},
		{"json logs", []string{"grpo", "--model", md, "--run", "j", "--log-format", "json", good}, 0, []string{`"msg":"step","step":1,`, `"msg":"training done"`}},
		// A --best-metric no row can have is refused before training.
		{"misspelt best metric", []string{"grpo", "--model", md, "--run", "bm", "--best-metric", "val_reward", good}, 2,
			[]string{`--best-metric "val_reward" is not a metric`, "reward_mean", "val/reward, val/reward_std_dev"}},
		{"sft misspelt best metric", []string{"sft", "--model", md, "--run", "sbm", "--best-metric", "reward_mean", good}, 2,
			[]string{`--best-metric "reward_mean" is not a metric`, "conversations"}},
		{"misspelt eval metric", []string{"grpo", "--model", md, "--run", "em", "--best-metric", "val/rewrd", good}, 2,
			[]string{`--best-metric "val/rewrd": "rewrd" is neither`, "val/reward"}},
		{"eval best metric", []string{"grpo", "--model", md, "--run", "ev", "--best-metric", "val/reward", good}, 0, []string{"msg=\"training done\""}},
		{"bad log level", []string{"grpo", "--model", md, "--run", "l", "--log-level", "loud", good}, 2, []string{"--log-level"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, msg := runMain(t, append(tc.args[:1:1], append(common, tc.args[1:]...)...)...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d\n%s", code, tc.code, msg)
			}
			for _, s := range tc.says {
				if !strings.Contains(msg, s) {
					t.Errorf("output does not say %q:\n%s", s, msg)
				}
			}
			if tc.code == cli.ExitUsage {
				run := tc.args[slices.Index(tc.args, "--run")+1]
				if _, err := os.Stat(filepath.Join(out, run)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("bad input left %s behind (%v)", filepath.Join(out, run), err)
				}
			}
		})
	}
}

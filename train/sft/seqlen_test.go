package sft

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/spf13/pflag"
)

// setContext rewrites max_position_embeddings in the model folder md's
// config.json, so that a test's sequences can pass it.
func setContext(t *testing.T, md string, n int) {
	t.Helper()
	p := filepath.Join(md, "config.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["max_position_embeddings"] = n
	if b, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// longParquet writes a trajectory file of four one-trajectory groups,
// short conversations but the third (group g2), whose answer is some 300
// tokens long.
func longParquet(t *testing.T, dir string) string {
	t.Helper()
	var gs []trajectory.Group
	for i := range 4 {
		answer := fmt.Sprintf("a%d", i)
		if i == 2 {
			answer = strings.Repeat("long answer ", 25)
		}
		id := fmt.Sprintf("g%d", i)
		gs = append(gs, trajectory.Group{ID: id, Trajectories: []trajectory.Trajectory{{
			ID: "t" + id, GroupID: id, Reward: trajectory.Float64(1),
			Messages: []trajectory.Message{
				{Role: "user", Content: fmt.Sprintf("q%d", i)},
				{Role: "assistant", Content: answer},
			},
		}}})
	}
	p := filepath.Join(dir, "long.parquet")
	if err := trajectory.WriteFile(context.Background(), p, gs, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	return p
}

// runSeq runs one SFT step of run name over in, with --max-seq-len and
// --token-budget as given, logging to log.
func runSeq(t *testing.T, dir, md, in, name string, maxLen, budget int, log *bytes.Buffer) error {
	t.Helper()
	be, err := cpu.New(cpu.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	var o Options
	o.AddFlags(pflag.NewFlagSet("t", pflag.ContinueOnError))
	o.Model, o.Out, o.Name, o.Inputs = md, filepath.Join(dir, "out"), name, fileset.Files(in)
	o.Rank, o.Steps, o.BatchSize, o.Backend, o.Log = 4, 1, 0, be, textLog(log)
	o.MaxSeqLen = maxLen
	if budget > 0 {
		o.TokenBudget = budget
	}
	return Run(context.Background(), o)
}

// TestSeqPastContextRefused: a conversation with a sequence longer than
// the model's context (max_position_embeddings) is bad input naming its
// file, group and trajectory, its length and --max-seq-len, and nothing is
// written; it trained on positions the model has none for, silently.
func TestSeqPastContextRefused(t *testing.T) {
	dir, md, _ := setup(t)
	setContext(t, md, 128)
	in := longParquet(t, dir)
	var log bytes.Buffer
	err := runSeq(t, dir, md, in, "ctx", 0, 0, &log)
	if !errors.Is(err, stageerr.ErrBadInput) {
		t.Fatalf("error %v, want bad input", err)
	}
	for _, want := range []string{in + " row 2 (group g2, trajectory tg2)", "longer than the model's context of 128 tokens", "--max-seq-len"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "group g1") {
		t.Errorf("error %q names a short conversation", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "ctx")); !os.IsNotExist(err) {
		t.Errorf("the refused run left its folder: %v", err)
	}
}

// TestMaxSeqLenDrops: --max-seq-len leaves out the conversations with a
// longer sequence, with one warning counting them and naming their rows,
// and trains the rest; past the model's context it is refused as usage.
func TestMaxSeqLenDrops(t *testing.T) {
	dir, md, _ := setup(t)
	setContext(t, md, 512)
	in := longParquet(t, dir)
	var log bytes.Buffer
	if err := runSeq(t, dir, md, in, "drop", 100, 0, &log); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(log.String(), "level=WARN"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, log.String())
	}
	want := "1 of 4 trajectories have a sequence longer than --max-seq-len 100 and are not trained: " + in + " row 2 (group g2, trajectory tg2): "
	if !strings.Contains(log.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, log.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "out", "drop", "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"conversations":3`) {
		t.Errorf("metrics %s: want 3 conversations trained", b)
	}
	err = runSeq(t, dir, md, in, "past", 513, 0, &log)
	if !errors.Is(err, stageerr.ErrUsage) || !strings.Contains(err.Error(), "--max-seq-len 513 is longer than the model's context of 512 tokens") {
		t.Errorf("--max-seq-len past the context: error %v, want usage naming both", err)
	}
}

// TestOverBudgetWarned: a conversation with more tokens than
// --token-budget is a micro-batch of its own, which the run now says once,
// naming the row and the flag; it said nothing, while the flag's help
// promised micro-batches of that many tokens.
func TestOverBudgetWarned(t *testing.T) {
	dir, md, _ := setup(t)
	in := longParquet(t, dir)
	var log bytes.Buffer
	if err := runSeq(t, dir, md, in, "budget", 0, 100, &log); err != nil {
		t.Fatal(err)
	}
	want := "1 trajectories have more tokens than --token-budget 100"
	if n := strings.Count(log.String(), "level=WARN"); n != 1 || !strings.Contains(log.String(), want) || !strings.Contains(log.String(), "(group g2, trajectory tg2)") {
		t.Errorf("want one warning %q naming group g2:\n%s", want, log.String())
	}
}

// TestMaxSeqLenSavedOnlyWhenSet: a run saved before --max-seq-len has no
// max_seq_len in its config; one without the flag saves none, so the two
// compare equal on resume.
func TestMaxSeqLenSavedOnlyWhenSet(t *testing.T) {
	var o Options
	o.AddFlags(pflag.NewFlagSet("t", pflag.ContinueOnError))
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "max_seq_len") {
		t.Errorf("config without --max-seq-len saves it: %s", b)
	}
}

package grpojob

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

	"github.com/hone-rl/hone/internal/stageerr"
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

// writeLong writes 2 groups of 2 trajectories for md into dir, with
// varied rewards; trajectory 1 of group 1 (row 3) answers with some 250
// tokens, the others with a few.
func writeLong(t *testing.T, md, dir string) string {
	t.Helper()
	in := filepath.Join(dir, "long.parquet")
	writeGroupsWith(t, md, in, 2, 2, func(g, i int) string {
		if g == 1 && i == 1 {
			return strings.Repeat("long move ", 25)
		}
		return fmt.Sprintf("move %d", g+i)
	}, varied)
	return in
}

// TestSeqPastContextRefused: a trajectory with a sequence longer than the
// model's context (max_position_embeddings) is bad input naming its file,
// row, group and trajectory and --max-seq-len, before the run folder is
// made; it trained on positions the model has none for, silently.
func TestSeqPastContextRefused(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	setContext(t, md, 128)
	in := writeLong(t, md, dir)
	var log bytes.Buffer
	err := runWith(context.Background(), backend(t), baseOptions(md, filepath.Join(dir, "out"), "ctx", in), textLog(&log))
	if !errors.Is(err, stageerr.ErrBadInput) {
		t.Fatalf("error %v, want bad input", err)
	}
	for _, want := range []string{"long.parquet row 3 (group long.parquet-g1, trajectory long.parquet-g1-t1): ", "longer than the model's context of 128 tokens", "--max-seq-len"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "ctx")); !os.IsNotExist(err) {
		t.Errorf("the refused run left its folder: %v", err)
	}
}

// TestMaxSeqLenDrops: --max-seq-len leaves out the trajectories with a
// longer sequence, with one warning naming the row, counts them per step
// (too_long) and trains the rest; past the model's context the flag is
// refused as usage, in watch mode too.
func TestMaxSeqLenDrops(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	setContext(t, md, 512)
	in := writeLong(t, md, dir)
	var log bytes.Buffer
	o := baseOptions(md, filepath.Join(dir, "out"), "drop", in)
	o.MaxSeqLen = 100
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatal(err)
	}
	want := "1 of 4 trajectories have a sequence longer than --max-seq-len 100 and are not trained: " + in + " row 3 (group long.parquet-g1, trajectory long.parquet-g1-t1): "
	if n := strings.Count(log.String(), "level=WARN"); n != 1 || !strings.Contains(log.String(), want) {
		t.Errorf("want one warning %q:\n%s", want, log.String())
	}
	rows := readMetrics(t, filepath.Join(dir, "out", "drop"))
	if len(rows) != 1 || rows[0]["too_long"] != 1 || rows[0]["trajectories_trained"] != 3 {
		t.Errorf("metrics %v: want too_long 1, 3 trajectories trained", rows)
	}
	for _, watch := range []bool{false, true} {
		o := baseOptions(md, filepath.Join(dir, "out"), "past", in)
		if watch {
			o = baseOptions(md, filepath.Join(dir, "out"), "past")
			o.WatchDir = dir
		}
		o.MaxSeqLen = 513
		err := runWith(context.Background(), backend(t), o, textLog(&log))
		if !errors.Is(err, stageerr.ErrUsage) || !strings.Contains(err.Error(), "--max-seq-len 513 is longer than the model's context of 512 tokens") {
			t.Errorf("watch %v: --max-seq-len past the context: error %v, want usage naming both", watch, err)
		}
	}
}

// TestOverBudgetWarned: a trajectory with more tokens than --token-budget
// is a micro-batch of its own, which the run says once, naming the row;
// it said nothing. --norm art packs rows of its own length, and is not
// told of --token-budget.
func TestOverBudgetWarned(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	in := writeLong(t, md, dir)
	for _, norm := range []string{"sequence", "art"} {
		var log bytes.Buffer
		o := baseOptions(md, filepath.Join(dir, "out"), "budget-"+norm, in)
		o.TokenBudget, o.Loss.Norm = 100, norm
		if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
			t.Fatal(err)
		}
		warned := strings.Count(log.String(), "1 trajectories have more tokens than --token-budget 100")
		if want := map[string]int{"sequence": 1, "art": 0}[norm]; warned != want || (want == 1 && !strings.Contains(log.String(), "long.parquet row 3")) {
			t.Errorf("--norm %s: warned %d times, want %d, naming row 3:\n%s", norm, warned, want, log.String())
		}
	}
}

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
)

// TestARTCosineSaysHowToCountUpdates runs hone-train grpo as a process
// with --norm art and --lr-schedule cosine but no --schedule-steps. On
// files the run counts its updates ahead, takes them as the horizon and
// says so. With --watch-dir, whose later files are unknown, the usage
// error says where the count of updates is found (each step's "updates"
// in metrics.jsonl and its log line, a call's optimizer_updates) and how
// to set the horizon from it, and so does grpo's --schedule-steps help; a
// --norm art run does record those numbers. Before, the error asked for
// the horizon "in optimizer updates (one per packed row)", which a user
// cannot count before the rows are packed, and said no more; and a run on
// files was refused too.
func TestARTCosineSaysHowToCountUpdates(t *testing.T) {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	in := filepath.Join(dir, "s", "a.parquet")
	out := filepath.Join(dir, "adapters")
	base := []string{"grpo", "--model", md, "--out", out, "--rank", "2", "--threads", "1", "--norm", "art", "--packed-sequence-length", "16", "--steps", "2"}
	code, text := runMain(t, append(base, "--run", "cos", "--lr-schedule", "cosine", in)...)
	if code != 0 || !strings.Contains(text, "cosine horizon: ") || !strings.Contains(text, "updates, counted from the input") {
		t.Errorf("--norm art --lr-schedule cosine on files without --schedule-steps: exit %d, want 0 and the counted horizon logged; output:\n%s", code, text)
	}
	code, text = runMain(t, append(base, "--run", "watch", "--lr-schedule", "cosine", "--watch-dir", filepath.Join(dir, "s"))...)
	for _, want := range []string{"--schedule-steps", "--watch-dir", `"updates"`, "metrics.jsonl", "optimizer_updates", "planned steps"} {
		if code != cli.ExitUsage || !strings.Contains(text, want) {
			t.Errorf("--norm art --watch-dir --lr-schedule cosine without --schedule-steps: exit %d, want %d saying %q; output:\n%s", code, cli.ExitUsage, want, text)
		}
	}
	_, help := runMain(t, "grpo", "--help")
	if !strings.Contains(help, `"updates"`) {
		t.Errorf("grpo --help: --schedule-steps does not say where a --norm art step's updates are counted:\n%s", help)
	}
	// What the message points at is there: a --norm art run records each
	// step's updates and the call's total.
	code, text = runMain(t, append(base, "--run", "const", in)...)
	if code != 0 || !strings.Contains(text, "optimizer_updates=") {
		t.Fatalf("--norm art run: exit %d, want 0 and a summary with optimizer_updates\n%s", code, text)
	}
	for _, r := range stepMetrics(t, filepath.Join(out, "const")) {
		if u, ok := r["updates"].(float64); !ok || u < 1 {
			t.Errorf("metrics row %v has no \"updates\"", r)
		}
	}
}

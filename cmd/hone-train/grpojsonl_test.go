package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
)

// TestGRPOOnJSONLinesSaysHowToConvert runs hone-train grpo as a process on
// a JSON Lines file (which sft reads and grpo does not): exit 2, naming
// the file, saying it holds JSON and how to make it a trajectory file.
// Before, it said only that the file had no Parquet magic bytes,
// "truncated, or not Parquet", as for a file cut short.
func TestGRPOOnJSONLinesSaysHowToConvert(t *testing.T) {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	in := filepath.Join(dir, "scored.jsonl")
	if err := os.WriteFile(in, []byte(`{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a", "trainable": true}], "reward": 1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, text := runMain(t, "grpo", "--model", md, "--run", "j", "--out", filepath.Join(dir, "adapters"), "--threads", "1", in)
	if code != cli.ExitUsage || !strings.Contains(text, in) || !strings.Contains(text, "JSON") || !strings.Contains(text, "hone-inspect from-jsonl") {
		t.Errorf("exit %d, want %d naming %s as JSON and hone-inspect from-jsonl; output:\n%s", code, cli.ExitUsage, in, text)
	}
}

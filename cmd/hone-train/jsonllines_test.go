package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSFTWarningsNameJSONLLines runs hone-train sft as a process on a
// JSON Lines chat file whose lines have no ids: each warning names a line
// it leaves out as FILE:LINE (blank lines counted, as an editor counts
// them), not by the ids made up for it ("g-…", "t-…"), which appear
// nowhere in the file; a line that gives its own ids is named by them too.
func TestSFTWarningsNameJSONLLines(t *testing.T) {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	in := filepath.Join(dir, "chats.jsonl")
	long := strings.Repeat("long answer ", 30)
	if err := os.WriteFile(in, []byte(`{"messages": [{"role": "user", "content": "q0"}, {"role": "assistant", "content": "a0"}]}

{"messages": [{"role": "user", "content": "no answer"}]}
{"messages": [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"}], "split": "val"}
{"messages": [{"role": "user", "content": "q2"}, {"role": "assistant", "content": "`+long+`"}]}
{"messages": [{"role": "user", "content": "q3"}], "group_id": "mine", "trajectory_id": "t3"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, text := runMain(t, "sft", "--model", md, "--run", "lines", "--out", filepath.Join(dir, "adapters"), "--rank", "2", "--threads", "1",
		"--steps", "1", "--max-seq-len", "60", in)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, text)
	}
	for _, want := range []string{
		"no assistant turn to train and are left out: " + in + ":3, " + in + ":6 (group mine, trajectory t3)",
		"split val or test and are left out of training (held-out data): " + in + ":4",
		"longer than --max-seq-len 60 and are not trained: " + in + ":5",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in the output:\n%s", want, text)
		}
	}
	if strings.Contains(text, "group g-") || strings.Contains(text, "trajectory t-") {
		t.Errorf("a warning names a line by an id made up for it:\n%s", text)
	}
}

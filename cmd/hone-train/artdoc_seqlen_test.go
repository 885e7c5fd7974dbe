package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestARTDocOverLongIsTruncatedByART: what docs/art.md and hone-train
// grpo --help say ART does with a sequence longer than max_seq_length
// matches ART's RL code: it truncates it to the packed row length (which
// is at most max_seq_length; src/art/local/pack.py and
// src/art/preprocessing/pack.py, truncate_long_results=True), it does not
// drop it. Only ART's SFT tokenizer drops over-long rows. The page said
// ART drops them, contradicting its own "ART truncates it" bullet, and so
// hid that --max-seq-len's leaving them out is Hone's choice.
func TestARTDocOverLongIsTruncatedByART(t *testing.T) {
	b, err := os.ReadFile("../../docs/art.md")
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "| `max_seq_length`") {
			row = line
		}
	}
	if row == "" {
		t.Fatal("docs/art.md's table has no max_seq_length row")
	}
	if strings.Contains(row, "ART drops") || !strings.Contains(row, "ART truncates") {
		t.Errorf("the max_seq_length row should say ART's RL truncates an over-long sequence, not drop it: %s", row)
	}
	root := newRootCmd(&bytes.Buffer{}, &bytes.Buffer{})
	grpo, _, err := root.Find([]string{"grpo"})
	if err != nil {
		t.Fatal(err)
	}
	f := grpo.Flags().Lookup("max-seq-len")
	if f == nil {
		f = grpo.InheritedFlags().Lookup("max-seq-len")
	}
	if f == nil {
		t.Fatal("hone-train grpo has no --max-seq-len")
	}
	if strings.Contains(f.Usage, "as ART drops") {
		t.Errorf("--max-seq-len's help says ART drops over-long rows, which only its SFT does: %s", f.Usage)
	}
}

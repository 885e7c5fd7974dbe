package grpojob

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestARTHistoryPastPackedLengthWarns: with --norm art and a
// --packed-sequence-length shorter than a history, the run warns once,
// naming the flag, the rows and that the history trains whole in a row
// of its own (ART truncates it to the row length). --token-budget's
// warning says the same of its micro-batches, but --norm art turns that
// check off, so such a run trained longer rows, with their memory, and
// said nothing.
func TestARTHistoryPastPackedLengthWarns(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	in := filepath.Join(dir, "in.parquet")
	writeGroups(t, md, in, 2, 2, varied)
	for _, rowLen := range []int{12, 4096} {
		var log bytes.Buffer
		o := baseOptions(md, filepath.Join(dir, "out"), map[int]string{12: "short", 4096: "long"}[rowLen], in)
		o.Loss.Norm = "art"
		o.PackedSeqLen = rowLen
		if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
			t.Fatal(err)
		}
		text := log.String()
		warned := strings.Contains(text, "level=WARN") && strings.Contains(text, "longer than --packed-sequence-length 12") &&
			strings.Contains(text, "in.parquet row 0 (group") && strings.Contains(text, "truncates")
		if warned != (rowLen == 12) {
			t.Errorf("--packed-sequence-length %d: warned %v:\n%s", rowLen, warned, text)
		}
	}
}

package grpojob

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// TestARTRowWarningLeavesOutUntrainedHistory: with --norm art, a history
// with no trainable turn is packed into no row (artHistories), so one
// longer than --packed-sequence-length is not "a packed row of its own,
// trained whole". A trajectory whose long main history is context only
// and whose short additional history trains drew that warning all the
// same; the trainable history, within the row length, draws none now.
func TestARTRowWarningLeavesOutUntrainedHistory(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	in := filepath.Join(dir, "in.parquet")
	writeGroups(t, md, in, 2, 2, varied)
	r, err := trajectory.ReadFile(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	for g := range r {
		for i := range r[g].Trajectories {
			tr := &r[g].Trajectories[i]
			// The short trainable history moves to additional_histories;
			// the main one becomes a long read with an untrained reply.
			tr.AdditionalHistories = []trajectory.History{{Messages: tr.Messages}}
			tr.Messages = []trajectory.Message{
				{Role: "user", Content: strings.Repeat("the rules of the game, once more. ", 12)},
				{Role: "assistant", Content: "ok"},
			}
		}
	}
	if err := trajectory.WriteFile(context.Background(), in, r, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	o := baseOptions(md, filepath.Join(dir, "out"), "r", in)
	o.Loss.Norm = "art"
	o.PackedSeqLen = 200 // past the trainable history, short of the context one
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatal(err)
	}
	text := log.String()
	if strings.Contains(text, "--packed-sequence-length") {
		t.Errorf("a history that trains nothing was warned of as a packed row of its own:\n%s", text)
	}
	if !strings.Contains(text, "trajectories_trained=4") {
		t.Errorf("the additional histories did not train; the test shows nothing:\n%s", text)
	}
}

package trainer

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/chattemplate"
	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/format/tokenizer"
	"github.com/hone-rl/hone/format/trajectory"
)

// TestLayoutPrintsTheSampledDate: a template that writes today's date into
// the prompt (strftime_now, as Llama 3.2's does) is laid out for training
// with the date the trajectory was sampled at, the one the server's
// prompt held, not the date of the training run; and with its creation
// time when it records no start.
func TestLayoutPrintsTheSampledDate(t *testing.T) {
	const src = `{{ '<|im_start|>system\nToday is ' + strftime_now('%d %b %Y') + '<|im_end|>\n' }}` +
		`{% for m in messages %}{{ '<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n' }}{% endfor %}` +
		`{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`
	tmpl, err := chattemplate.New(src, map[string]string{"eos_token": "<|im_end|>"})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(filepath.Join("..", "..", "testdata", "tokenizers", "qwen3"))
	if err != nil {
		t.Fatal(err)
	}
	text := &layout.Model{Template: tmpl, Tokenizer: tok}
	msgs := []trajectory.Message{{Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hello", Trainable: true}}
	for _, c := range []struct {
		tr   trajectory.Trajectory
		want string
	}{
		{trajectory.Trajectory{ID: "a", GroupID: "g", Messages: msgs, StartedAt: time.Date(2025, 1, 2, 10, 0, 0, 0, time.UTC), CreatedAt: time.Date(2025, 3, 4, 0, 0, 0, 0, time.UTC)}, "Today is 02 Jan 2025"},
		{trajectory.Trajectory{ID: "b", GroupID: "g", Messages: msgs, CreatedAt: time.Date(2025, 3, 4, 0, 0, 0, 0, time.UTC)}, "Today is 04 Mar 2025"},
	} {
		seqs, err := LayoutHistories(context.Background(), text, &c.tr, layout.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(seqs) != 1 {
			t.Fatalf("%d sequences", len(seqs))
		}
		ids := make([]int, len(seqs[0].IDs))
		for i, id := range seqs[0].IDs {
			ids[i] = int(id)
		}
		if got := tok.Decode(ids, false); !strings.Contains(got, c.want) {
			t.Errorf("trajectory %s laid out as %q, want %q in it", c.tr.ID, got, c.want)
		}
	}
}

// TestLayoutLeavesOutUntrainedSequences: a conversation that Qwen3's
// template does not render prefix-preserving (the older turn's <think>
// block is dropped once a later user message follows) is laid out in
// two sequences; when only the first turn trains (a trajectory that
// marks it, or --turns last with the other marked), the second sequence
// holds no trained token. It was kept: every step ran the model over
// its tokens for nothing, and --max-seq-len, which counts every
// sequence, left the whole trajectory out when that untrained one was
// the long one, though its trained turn fits.
func TestLayoutLeavesOutUntrainedSequences(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata")
	tmpl, err := chattemplate.Load(filepath.Join(dir, "templates", "qwen3"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(filepath.Join(dir, "tokenizers", "qwen3"))
	if err != nil {
		t.Fatal(err)
	}
	text := &layout.Model{Template: tmpl, Tokenizer: tok}
	tr := trajectory.Trajectory{ID: "a", GroupID: "g", Messages: []trajectory.Message{
		{Role: "user", Content: "Hi"},
		{Role: "assistant", Content: "Hello", ReasoningContent: "greet back", Trainable: true},
		{Role: "user", Content: "Tell me a story"},
		{Role: "assistant", Content: strings.Repeat("once upon a time ", 40)},
	}}
	seqs, err := LayoutHistories(context.Background(), text, &tr, layout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range seqs {
		if (&Example{Seqs: []layout.Sequence{s}}).Trainable() == 0 {
			t.Errorf("sequence %d of %d (%d tokens) trains no token", i+1, len(seqs), len(s.IDs))
		}
	}
	ex := Example{Seqs: seqs}
	if ex.Trainable() == 0 {
		t.Fatal("the first turn is not trained")
	}
	lens := Lengths{Max: 60, Drop: true, What: "--max-seq-len 60"}
	if lens.Check(&ex, "row 0") {
		t.Errorf("--max-seq-len 60 leaves the trajectory out, though its trained sequence has %d tokens", len(seqs[0].IDs))
	}
}

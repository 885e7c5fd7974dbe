package layout

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/chattemplate"
	"github.com/hone-rl/hone/format/tokenizer"
	"github.com/hone-rl/hone/format/trajectory"
)

// TestDateIsTheSameForEveryRendering: a conversation without a sampling
// time (a chat file for SFT: Options.Now zero) is laid out under a
// template that prints today's date (strftime_now, as Llama 3.2's does),
// rendering its prompt and its turns several times. Each rendering took
// the clock anew, so a layout across midnight compared a prompt of one
// day with a turn of the next: the conversation was refused as not
// prefix-preserving (the whole SFT run stopped on it), or a later turn
// started a new sequence. The clock here moves a day at each reading.
func TestDateIsTheSameForEveryRendering(t *testing.T) {
	const src = `{{ '<|im_start|>system\nToday is ' + strftime_now('%d %b %Y') + '<|im_end|>\n' }}` +
		`{% for m in messages %}{{ '<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n' }}{% endfor %}` +
		`{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`
	tmpl, err := chattemplate.New(src, map[string]string{"eos_token": "<|im_end|>"})
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2025, 1, 1, 23, 59, 59, 0, time.UTC)
	tmpl.Clock = func() time.Time {
		day = day.AddDate(0, 0, 1)
		return day
	}
	tok, err := tokenizer.Load(filepath.Join(tokenizers, "qwen3"))
	if err != nil {
		t.Fatal(err)
	}
	msgs := []trajectory.Message{
		{Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hello", Trainable: true},
		{Role: "user", Content: "Bye"}, {Role: "assistant", Content: "Ciao", Trainable: true},
	}
	lay, err := FromTrajectory(context.Background(), tmpl, tok, msgs, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(lay.Sequences) != 1 {
		t.Errorf("%d sequences, want 1: the prompts' dates differ", len(lay.Sequences))
	}
}

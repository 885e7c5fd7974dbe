package layout

import (
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// TestReasoningContentReachesTemplate: a trajectory message's
// ReasoningContent is the template's reasoning_content, so Qwen3 renders it
// in the final assistant turn's <think> block; without it the block is
// empty, as before.
func TestReasoningContentReachesTemplate(t *testing.T) {
	var qwen3 model
	for _, m := range models(t) {
		if m.name == "qwen3" {
			qwen3 = m
		}
	}
	msgs := []trajectory.Message{
		{Role: "user", Content: "2+2?"},
		{Role: "assistant", Content: "4", ReasoningContent: "Two plus two is four.", Trainable: true},
	}
	got, err := Render(t.Context(), qwen3.tmpl, msgs, nil, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n<think>\nTwo plus two is four.\n</think>\n\n4<|im_end|>\n"
	if got != want {
		t.Errorf("render\n%q\nwant\n%q", got, want)
	}
	// The layout trains the reasoning tokens with the rest of the turn.
	l, err := FromTrajectory(t.Context(), qwen3.tmpl, qwen3.tok, msgs, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := l.Sequences[0]
	var trained []int32
	for i, id := range s.IDs {
		if s.Trainable[i] {
			trained = append(trained, id)
		}
	}
	if text := decode(qwen3.tok, trained); !strings.Contains(text, "Two plus two is four.") {
		t.Errorf("trained text %q lacks the reasoning", text)
	}

	msgs[1].ReasoningContent = ""
	got, err = Render(t.Context(), qwen3.tmpl, msgs, nil, false, nil)
	if err != nil || !strings.Contains(got, "<think>\n\n</think>\n\n4") {
		t.Errorf("without reasoning: %q %v", got, err)
	}
	if c := Messages(msgs)[1]; c.ReasoningContent != nil {
		t.Errorf("empty ReasoningContent became %q, want the key left out", *c.ReasoningContent)
	}
}

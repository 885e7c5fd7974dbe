package main

import (
	"fmt"
	"testing"

	mt "github.com/hone-rl/hone/format/modelfolder/modelfoldertest"
)

// TestRenderIDsFolderStopTokens: `render --ids` ends a turn where serve
// stopped and train ends it, at the folder's stop ids: a Llama 3.2 turn
// sampled up to <|end_of_text|> (which generation_config.json lists) ends
// with it trained, and the template's <|eot_id|> is not laid out after it.
func TestRenderIDsFolderStopTokens(t *testing.T) {
	model := mt.Llama32(t)
	conv := fmt.Appendf(nil, `{"messages":[{"role":"user","content":"Hi"},`+
		`{"role":"assistant","content":"Hello","token_ids":[72,101,108,108,111,%d],"finish_reason":"stop"}]}`, mt.EndOfText)
	seqs := parseIDs(t, mustRun(t, conv, "render", "--model", model, "--ids").stdout)
	if len(seqs) != 1 {
		t.Fatalf("%d sequences, want 1", len(seqs))
	}
	last := seqs[0][len(seqs[0])-1]
	if last.id != mt.EndOfText || !last.train {
		t.Errorf("last token %d %q (trained %v), want the sampled <|end_of_text|> (%d), trained", last.id, last.text, last.train, mt.EndOfText)
	}
}

package serve

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/format/modelfolder"
	mt "github.com/hone-rl/hone/format/modelfolder/modelfoldertest"
	"github.com/hone-rl/hone/format/trajectory"
)

// TestLlama32EndOfTextEndsTheTurn is issue #22's Llama 3.2 case: serve
// stops on <|end_of_text|> because generation_config.json lists it, and
// the trainer, laying out the turn serve returned, must end the turn there
// too: the sampled stop token is the turn's last trained token and nothing
// of the template follows it. Layout's old hard-coded stop list did not
// know <|end_of_text|> and appended the template's <|eot_id|> after it, a
// token the model never saw.
func TestLlama32EndOfTextEndsTheTurn(t *testing.T) {
	dir := mt.Llama32(t)
	sampled := append(mt.Tokens("Hello"), mt.EndOfText)
	ts := startServer(t, Options{Model: dir, ServedModelName: "llama32"}, func(s *Server) {
		s.forceOutput = func([]int32, int) []int32 { return sampled }
	})
	status, body := ts.post(t, "/v1/chat/completions",
		`{"model": "llama32", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 20, "return_token_ids": true}`)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	var resp struct {
		PromptTokenIDs []int32 `json:"prompt_token_ids"`
		Choices        []struct {
			Message      struct{ Content string }
			FinishReason string  `json:"finish_reason"`
			TokenIDs     []int32 `json:"token_ids"`
		}
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	ch := resp.Choices[0]
	if ch.FinishReason != "stop" || !slices.Equal(ch.TokenIDs, sampled) || ch.Message.Content != "Hello" {
		t.Fatalf("serve: finish %q, ids %v, content %q; want stop on <|end_of_text|> (%d) after %v", ch.FinishReason, ch.TokenIDs, ch.Message.Content, mt.EndOfText, sampled)
	}

	// Lay the recorded turn out as hone-train does (trainer.LoadBase).
	f, err := modelfolder.Open(dir, modelfolder.All)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	msgs := []trajectory.Message{
		{Role: "user", Content: "Hi"},
		{Role: "assistant", Content: ch.Message.Content, Trainable: true, TokenIDs: ch.TokenIDs, FinishReason: ch.FinishReason},
	}
	l, err := layout.FromFolder(f).Layout(t.Context(), msgs, nil, layout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Sequences) != 1 || len(l.Sequences[0].Turns) != 1 {
		t.Fatalf("layout: %d sequences, want one with one turn", len(l.Sequences))
	}
	seq := l.Sequences[0]
	turn := seq.Turns[0]
	if !slices.Equal(seq.IDs[:turn.Start], resp.PromptTokenIDs) {
		t.Errorf("layout's context %v is not the prompt serve saw %v", seq.IDs[:turn.Start], resp.PromptTokenIDs)
	}
	if !slices.Equal(seq.IDs[turn.Start:turn.End], sampled) || l.NumTrainable() != len(sampled) {
		t.Errorf("turn %v (%d trainable), want exactly the sampled %v", seq.IDs[turn.Start:turn.End], l.NumTrainable(), sampled)
	}
	if after := seq.IDs[turn.End:]; len(after) != 0 {
		t.Errorf("after the sampled <|end_of_text|> layout appended %v (the template's <|eot_id|> is %d): the turn did not end where serve stopped", after, mt.EOT)
	}
}

// TestServeAndLayoutStopOnTheSameTokens: for every model folder the tests
// have, serve's stop ids and the ones layout ends turns at (opened as
// hone-train opens the folder, and as hone-inspect opens its text side)
// are one list.
func TestServeAndLayoutStopOnTheSameTokens(t *testing.T) {
	for _, c := range []struct {
		name, dir string
		want      []int
	}{
		{"tiny (qwen3, ChatML)", tinyDir(t), []int{258, 256}}, // <|im_end|>, <|endoftext|>
		{"llama 3.2", mt.Llama32(t), []int{mt.EndOfText, mt.EOM, mt.EOT}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var served []int
			for _, id := range startServer(t, Options{Model: c.dir}, nil).s.eos {
				served = append(served, int(id))
			}
			if !slices.Equal(served, c.want) {
				t.Errorf("serve stops on %v, want %v", served, c.want)
			}
			f, err := modelfolder.Open(c.dir, modelfolder.All) // as hone-train opens it
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
			if got := layout.FromFolder(f).StopTokens; !slices.Equal(got, served) {
				t.Errorf("train's layout ends turns at %v, serve stops on %v", got, served)
			}
			text, err := layout.LoadModel(c.dir) // as hone-inspect render --ids opens it
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(text.StopTokens, served) {
				t.Errorf("hone-inspect's layout ends turns at %v, serve stops on %v", text.StopTokens, served)
			}
		})
	}
}

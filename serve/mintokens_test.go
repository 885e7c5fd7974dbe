package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestMinTokens: vLLM's min_tokens keeps the model's end-of-sequence ids
// (and stop_token_ids) out of the choice, and stop strings from matching,
// until that many tokens are generated; it was answered as if it had not
// been sent (only the X-Hone-Warning header named it), so a choice pushed
// to EOS at once (logit_bias +100 on it) ended after one token. A stop
// string that ends in the first min_tokens tokens does not stop the choice
// either. min_tokens above max_tokens, or negative, is a 400 naming it, as
// in vLLM, and so is min_tokens with an output constraint (response_format).
func TestMinTokens(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	ask := func(extra string) sampledChoice {
		t.Helper()
		return ts.oneChoice(t, `{"model":"tiny","prompt":"hi","max_tokens":10,"temperature":0,"return_token_ids":true`+extra+`}`)
	}
	const eos = 258 // testdata/tiny/generation_config.json
	toEOS := fmt.Sprintf(`,"logit_bias":{"%d":100}`, eos)
	if c := ask(toEOS); len(c.TokenIDs) != 1 || c.TokenIDs[0] != eos {
		t.Fatalf("logit_bias +100 on EOS: %v, want EOS at once", c.TokenIDs)
	}
	c := ask(toEOS + `,"min_tokens":3`)
	if len(c.TokenIDs) != 4 || c.TokenIDs[3] != eos || slices.Contains(c.TokenIDs[:3], eos) || c.FinishReason != "stop" {
		t.Errorf("min_tokens 3 with EOS favoured: %v finish %q, want 3 tokens then EOS (stop)", c.TokenIDs, c.FinishReason)
	}
	// With ignore_eos the model's EOS does not end the choice, yet vLLM
	// holds it back within min_tokens all the same (its min_tokens bans
	// all_stop_token_ids, which hold the EOS ids whatever ignore_eos): the
	// first min_tokens tokens are never EOS, as a client of vLLM gets them.
	if c := ask(toEOS + `,"ignore_eos":true,"min_tokens":3`); len(c.TokenIDs) != 10 || slices.Contains(c.TokenIDs[:3], eos) || c.TokenIDs[3] != eos {
		t.Errorf("min_tokens 3, ignore_eos, EOS favoured: %v, want 3 other tokens, then EOS, on to max_tokens", c.TokenIDs)
	}
	// stop_token_ids are held back too.
	c = ask(`,"logit_bias":{"7":100},"stop_token_ids":[7],"min_tokens":2`)
	if len(c.TokenIDs) != 3 || c.TokenIDs[2] != 7 || slices.Contains(c.TokenIDs[:2], 7) {
		t.Errorf("min_tokens 2 with stop token 7 favoured: %v, want 2 other tokens then 7", c.TokenIDs)
	}

	// A stop string that the first token's text holds stops at once
	// without min_tokens, and not within the first min_tokens with it.
	plain := ask(`,"ignore_eos":true`)
	if plain.Text == "" {
		t.Fatalf("greedy answer has no text: %+v", plain)
	}
	first := []rune(plain.Text)[0]
	stop, _ := json.Marshal(string(first))
	if c := ask(`,"ignore_eos":true,"stop":[` + string(stop) + `]`); len(c.TokenIDs) > 4 || c.Text != "" || c.FinishReason != "stop" {
		t.Fatalf("stop %s: %q %v, want it to end the text at once", stop, c.Text, c.TokenIDs)
	}
	c = ask(`,"ignore_eos":true,"min_tokens":4,"stop":[` + string(stop) + `]`)
	if len(c.TokenIDs) < 5 && c.FinishReason == "stop" || !strings.HasPrefix(plain.Text, c.Text) || c.Text == "" {
		t.Errorf("min_tokens 4, stop %s: %q %v finish %q; want the stop string to match only past the 4th token of %q", stop, c.Text, c.TokenIDs, c.FinishReason, plain.Text)
	}

	// Out of bounds, and with an output constraint, whose complete
	// document allows nothing but its end.
	for _, c := range []struct{ path, body string }{
		{"/v1/completions", `{"model":"tiny","prompt":"hi","max_tokens":10,"min_tokens":11}`},
		{"/v1/completions", `{"model":"tiny","prompt":"hi","max_tokens":10,"min_tokens":-1}`},
		{"/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":10,"min_tokens":2,"response_format":{"type":"json_object"}}`},
	} {
		status, out := ts.post(t, c.path, c.body)
		if status != http.StatusBadRequest || !strings.Contains(out, `"param":"min_tokens"`) {
			t.Errorf("%s: %d %s, want 400 naming min_tokens", c.body, status, out)
		}
	}
}

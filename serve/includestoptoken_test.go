package serve

import (
	"testing"
)

// TestIncludeStopTokenTextSearched: with include_stop_str_in_output, a stop
// token's text joins the text, and vLLM searches the stop strings in it as
// in any other token's (its detokenizer decodes the stop token, then checks
// the stop strings): a stop string that ends inside the stop token's text
// cuts the text after it. hone-serve sent the stop token's whole text,
// the stop strings not looked for in it. The stop token here is
// <|im_end|> (258), made the first token by logit_bias and kept in the text
// by skip_special_tokens false.
func TestIncludeStopTokenTextSearched(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	base := `{"model":"tiny","prompt":"hi","max_tokens":8,"temperature":0,"ignore_eos":true,"return_token_ids":true,` +
		`"logit_bias":{"258":100},"stop_token_ids":[258],"skip_special_tokens":false,"include_stop_str_in_output":true`
	if c := ts.oneChoice(t, base+`}`); c.Text != "<|im_end|>" || len(c.TokenIDs) != 1 || c.TokenIDs[0] != 258 {
		t.Fatalf("stop token 258 forced and included: %q %v, want <|im_end|> [258]", c.Text, c.TokenIDs)
	}
	for _, c := range []struct{ stop, want string }{
		{"<|im", "<|im"},         // ends inside the stop token's text: cut after it
		{"_end|>", "<|im_end|>"}, // ends where its text ends
		{"x", "<|im_end|>"},      // not in it
	} {
		got := ts.oneChoice(t, base+`,"stop":["`+c.stop+`"]}`)
		if got.Text != c.want || got.FinishReason != "stop" || len(got.TokenIDs) != 1 {
			t.Errorf("stop token 258 and stop string %q, included: %q %v (%s), want %q with the one token",
				c.stop, got.Text, got.TokenIDs, got.FinishReason, c.want)
		}
	}
}

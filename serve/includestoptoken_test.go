package serve

import (
	"testing"
)

// TestIncludeStopTokenTextNotSearched: with include_stop_str_in_output, a
// stop token's text joins the text whole. vLLM's detokenizer
// (BaseIncrementalDetokenizer.update) decodes the stop token and then
// returns before its stop-string check ("Stop token triggered; skip stop
// string check"), so a stop string inside the stop token's text does not
// cut it. hone-serve searched it, and a stop string "<|im" cut the text to
// "<|im" where vLLM answers "<|im_end|>". The stop token here is
// <|im_end|> (258), made the first token by logit_bias and kept in the
// text by skip_special_tokens false.
func TestIncludeStopTokenTextNotSearched(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	base := `{"model":"tiny","prompt":"hi","max_tokens":8,"temperature":0,"ignore_eos":true,"return_token_ids":true,` +
		`"logit_bias":{"258":100},"stop_token_ids":[258],"skip_special_tokens":false,"include_stop_str_in_output":true`
	if c := ts.oneChoice(t, base+`}`); c.Text != "<|im_end|>" || len(c.TokenIDs) != 1 || c.TokenIDs[0] != 258 {
		t.Fatalf("stop token 258 forced and included: %q %v, want <|im_end|> [258]", c.Text, c.TokenIDs)
	}
	for _, stop := range []string{
		"<|im",   // ends inside the stop token's text
		"_end|>", // ends where its text ends
		"x",      // not in it
	} {
		got := ts.oneChoice(t, base+`,"stop":["`+stop+`"]}`)
		if got.Text != "<|im_end|>" || got.FinishReason != "stop" || len(got.TokenIDs) != 1 {
			t.Errorf("stop token 258 and stop string %q, included: %q %v (%s), want the stop token's whole text <|im_end|> with the one token",
				stop, got.Text, got.TokenIDs, got.FinishReason)
		}
	}
}

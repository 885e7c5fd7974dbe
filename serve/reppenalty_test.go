package serve

import (
	"net/http"
	"strings"
	"testing"
)

// TestRepetitionPenalty: vLLM's repetition_penalty divides the positive
// logits (and multiplies the negative ones) of every token the prompt or
// the output holds, applied after logit_bias, as vLLM orders them. It was
// answered as if not sent (only X-Hone-Warning named it). Greedy, with the
// prompt's first token "h" (104) biased by +60 and another (120) by +30,
// the answer is 104 at every step; with repetition_penalty 100 the
// prompt's 104 falls to about 0.6 and 120 comes first, then, seen, falls
// to about 0.3, below 104. 1 is off; 0 and below is a 400 naming it.
func TestRepetitionPenalty(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	body := func(extra string) string {
		return `{"model":"tiny","prompt":"hi","max_tokens":4,"ignore_eos":true,"temperature":0,"return_token_ids":true,"logit_bias":{"104":60,"120":30}` + extra + `}`
	}
	plain, _ := completionIDs(t, ts, body(""))
	if got := plain[0]; got[0] != 104 || got[1] != 104 {
		t.Fatalf("without repetition_penalty: %v, want 104 at every step", got)
	}
	if off, _ := completionIDs(t, ts, body(`,"repetition_penalty":1`)); off[0][0] != 104 {
		t.Errorf("repetition_penalty 1: %v, want it off", off[0])
	}
	pen, warning := completionIDs(t, ts, body(`,"repetition_penalty":100`))
	if got := pen[0]; got[0] != 120 || got[1] == 120 || warning != "" {
		t.Errorf("repetition_penalty 100: %v, %s %q; want 120 first (104 is the prompt's) and not again, no warning", got, WarningHeader, warning)
	}
	for _, v := range []string{"0", "-1"} {
		status, out := ts.post(t, "/v1/completions", `{"model":"tiny","prompt":"hi","max_tokens":2,"repetition_penalty":`+v+`}`)
		if status != http.StatusBadRequest || !strings.Contains(out, `"param":"repetition_penalty"`) {
			t.Errorf("repetition_penalty %s: %d %s, want 400 naming it", v, status, out)
		}
	}
}

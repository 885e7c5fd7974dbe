package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestIncludeStopStrInOutput: vLLM's include_stop_str_in_output keeps the
// stop string that ended a choice in its text (and a stop token's text),
// so that the text is that of every token_ids entry; it was answered as if
// not sent (only X-Hone-Warning named it), the stop string cut from the
// text while its tokens stayed in token_ids and the logprobs. The streamed
// text is the same.
func TestIncludeStopStrInOutput(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	ask := func(extra string) sampledChoice {
		t.Helper()
		return ts.oneChoice(t, `{"model":"tiny","prompt":"hi","max_tokens":12,"temperature":0,"ignore_eos":true,"return_token_ids":true`+extra+`}`)
	}
	streamed := func(extra string) string {
		t.Helper()
		status, out := ts.post(t, "/v1/completions", `{"model":"tiny","prompt":"hi","max_tokens":12,"temperature":0,"ignore_eos":true,"stream":true`+extra+`}`)
		if status != http.StatusOK {
			t.Fatalf("stream %s: %d %s", extra, status, out)
		}
		var text strings.Builder
		for line := range strings.SplitSeq(out, "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			var ev struct{ Choices []struct{ Text string } }
			if err := json.Unmarshal([]byte(data), &ev); err != nil || len(ev.Choices) != 1 {
				t.Fatalf("stream event %s: %v", data, err)
			}
			text.WriteString(ev.Choices[0].Text)
		}
		return text.String()
	}
	plain := ask("")
	runes := []rune(plain.Text)
	if len(runes) < 6 {
		t.Fatalf("greedy text %q is too short for the test", plain.Text)
	}
	// A stop string from the middle of the text, where it first occurs.
	stop := string(runes[2:4])
	before := plain.Text[:strings.Index(plain.Text, stop)]
	stopJSON, _ := json.Marshal(stop)
	if c := ask(`,"stop":[` + string(stopJSON) + `]`); c.Text != before || c.FinishReason != "stop" {
		t.Fatalf("stop %q: %q (%s), want %q", stop, c.Text, c.FinishReason, before)
	}
	inc := `,"stop":[` + string(stopJSON) + `],"include_stop_str_in_output":true`
	c := ask(inc)
	if c.Text != before+stop || c.FinishReason != "stop" {
		t.Errorf("stop %q included: %q (%s), want %q", stop, c.Text, c.FinishReason, before+stop)
	}
	if s := streamed(inc); s != c.Text {
		t.Errorf("stop %q included, streamed: %q, want %q", stop, s, c.Text)
	}

	// A stop token's text, as the text of the tokens up to it.
	at := 3 // the first token from the fourth on that did not come before
	for slices.Contains(plain.TokenIDs[:at], plain.TokenIDs[at]) {
		at++
	}
	upTo := ask(fmt.Sprintf(`,"max_tokens":%d`, at+1))
	c = ask(fmt.Sprintf(`,"stop_token_ids":[%d],"include_stop_str_in_output":true`, plain.TokenIDs[at]))
	if len(c.TokenIDs) != at+1 || c.FinishReason != "stop" || c.Text != upTo.Text {
		t.Errorf("stop token %d included: %q %v (%s), want the text of %v: %q", plain.TokenIDs[at], c.Text, c.TokenIDs, c.FinishReason, upTo.TokenIDs, upTo.Text)
	}
}

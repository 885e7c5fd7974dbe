package proxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// An upstream whose answer carries token ids and logprobs that do not pair
// up (3 ids, 2 logprobs) still reaches the agent as it came; the recorded
// turn keeps its text without the tokens, with an error saying why, so that
// the group is written when it closes rather than refused at every close.
func TestProxyUnpairedTokens(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","model":"agent@2","choices":[{"index":0,"finish_reason":"stop",`+
			`"message":{"role":"assistant","content":"Sunny."},"token_ids":[5,6,7],`+
			`"logprobs":{"content":[{"token":"Sun","logprob":-0.1},{"token":"ny.","logprob":-0.2}]}}]}`)
	}))
	defer up.Close()
	out := t.TempDir()
	base := proxyTo(t, up.URL, out)
	if status, body := chat(t, base, `{"model":"agent","messages":[{"role":"user","content":"Weather?"}]}`, "a", "g"); status != http.StatusOK || !strings.Contains(body, "Sunny.") {
		t.Fatalf("chat: %d %s", status, body)
	}
	tr := closeOne(t, base, out, "g")
	if !strings.Contains(tr.Error, "tokens were not recorded") || !strings.Contains(tr.Error, "2 logprobs for 3 token ids") {
		t.Errorf("error %q, want the turn's", tr.Error)
	}
	last := tr.Messages[len(tr.Messages)-1]
	if last.Role != "assistant" || last.Content != "Sunny." || len(last.TokenIDs) != 0 || len(last.Logprobs) != 0 {
		t.Errorf("recorded turn %+v, want its text without tokens", last)
	}
}

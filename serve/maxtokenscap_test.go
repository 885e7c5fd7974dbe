package serve

import (
	"net/http"
	"strings"
	"testing"
)

// TestMaxTokensCapSaysTheFix: a max_tokens over the server's cap is a 400
// that names both ways out, the client's max_tokens and hone-serve's
// --max-tokens; it said only "more than this server's cap of 4096", and
// hone-collect scenarios' default 8000 met it with nothing to go on.
func TestMaxTokensCapSaysTheFix(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t), MaxTokens: 64}, nil)
	for _, c := range []struct{ path, body string }{
		{"/v1/completions", `{"model":"tiny","prompt":"hi","max_tokens":100}`},
		{"/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":100}`},
	} {
		status, body := ts.post(t, c.path, c.body)
		if status != http.StatusBadRequest || !strings.Contains(body, "cap of 64") || !strings.Contains(body, "start hone-serve --max-tokens higher") {
			t.Errorf("%s: %d %s, want a 400 naming the cap and hone-serve --max-tokens", c.body, status, body)
		}
	}
}

package serve

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/waitfor"
)

// TestChatDeadlineFromArrival: a chat request's deadline (--request-timeout)
// runs from its arrival, so a request whose template took the whole of it
// to render is a 504 at once; the generation got a fresh deadline after the
// rendering, so a request could run for twice the timeout. The rendering
// is made to take the timeout by the rendered hook, which returns once the
// timeout has passed since it was called (after the request arrived).
func TestChatDeadlineFromArrival(t *testing.T) {
	const timeout = 300 * time.Millisecond
	ts := startServer(t, Options{Model: tinyDir(t), RequestTimeout: timeout}, func(s *Server) {
		s.rendered = func() {
			start := time.Now()
			waitfor.Until(t, 10*timeout, "the request timeout to pass", func() bool { return time.Since(start) > timeout })
		}
	})
	status, body := ts.post(t, "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`)
	if status != http.StatusGatewayTimeout || !strings.Contains(body, `"code":"timeout"`) {
		t.Errorf("a chat request whose rendering took the timeout: %d %s, want 504 timeout", status, body)
	}
}

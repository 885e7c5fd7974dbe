package serve

import (
	"context"
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
// request's context is done. (It waited for the timeout's length of wall
// time from its own call, and the deadline's timer had not always fired by
// then, so a quick generation sometimes finished: a 200 now and again.)
func TestChatDeadlineFromArrival(t *testing.T) {
	const timeout = 300 * time.Millisecond
	ts := startServer(t, Options{Model: tinyDir(t), RequestTimeout: timeout}, func(s *Server) {
		s.rendered = func(ctx context.Context) {
			waitfor.Until(t, 20*timeout, "the request's deadline to pass", func() bool { return ctx.Err() != nil })
		}
	})
	status, body := ts.post(t, "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`)
	if status != http.StatusGatewayTimeout || !strings.Contains(body, `"code":"timeout"`) {
		t.Errorf("a chat request whose rendering took the timeout: %d %s, want 504 timeout", status, body)
	}
}

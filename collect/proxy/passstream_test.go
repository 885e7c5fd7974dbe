package proxy_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A streamed request the proxy does not record (no X-Hone-Trajectory, or
// another route such as /v1/completions) still streams: each event
// reaches the agent while upstream keeps the stream open, not all of them
// once upstream has finished.
func TestProxyPassesUnrecordedStreamsAsTheyCome(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		event(w, chunk("Hel", 5, ""))
		select { // upstream is still generating
		case <-release:
		case <-r.Context().Done():
		}
		event(w, chunk("lo", 6, "stop"))
		event(w, "[DONE]")
	}))
	defer up.Close()
	defer close(release)
	base := proxyTo(t, up.URL, t.TempDir())
	for _, path := range []string{"/v1/chat/completions", "/v1/completions"} {
		ctx, cancel := context.WithCancel(context.Background())
		req := mustRequest(t, http.MethodPost, base+path, `{"model":"agent","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		got := make(chan string, 1)
		go func() { // the answer's headers may wait too
			resp, err := http.DefaultClient.Do(req.WithContext(ctx))
			if err != nil {
				got <- err.Error()
				return
			}
			defer resp.Body.Close()
			line, _ := bufio.NewReader(resp.Body).ReadString('\n')
			got <- line
		}()
		select {
		case line := <-got:
			if want := "data: " + chunk("Hel", 5, "") + "\n"; line != want {
				t.Errorf("%s: first line %q, want %q", path, line, want)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s: the proxy held back the first event while upstream kept the stream open", path)
		}
		cancel() // the agent goes away; upstream's handler returns
	}
}

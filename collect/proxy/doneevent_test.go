package proxy_test

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// streamThenHold serves an upstream that streams "Hel", then the event
// last, and keeps the connection open until the test ends; it sends a
// streamed request of trajectory t1 in group g through a proxy writing
// into out, and returns the proxy's URL once the agent has read a line for
// which seen holds.
func streamThenHold(t *testing.T, last string, seen func(line string) bool) (base, out string) {
	t.Helper()
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		event(w, chunk("Hel", 5, ""))
		event(w, last)
		select { // the connection stays open a while after the event
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(up.Close)
	t.Cleanup(func() { close(release) })
	out = t.TempDir()
	base = proxyTo(t, up.URL, out)
	req := mustRequest(t, http.MethodPost, base+"/v1/chat/completions", `{"model":"agent","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	req.Header.Set("X-Hone-Trajectory", "t1")
	req.Header.Set("X-Hone-Group", "g")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before the line awaited: %v", err)
		}
		if seen(line) {
			return base, out
		}
	}
}

// A stream that ends at [DONE] without a finish reason: the agent, whose
// SDK stops at [DONE], posts its reward while upstream has not yet closed
// the connection; the reward finds the turn recorded, with the error that
// it never finished.
func TestProxyStreamDoneRecordedBeforeAgentReadsIt(t *testing.T) {
	base, out := streamThenHold(t, "[DONE]", func(line string) bool { return line == "data: [DONE]\n" })
	status, msg := do(t, mustRequest(t, http.MethodPost, base+"/hone/trajectories/t1/reward", `{"reward":1}`))
	if status != http.StatusNoContent {
		t.Fatalf("reward after [DONE]: %d %s; want 204, the turn recorded", status, msg)
	}
	tr := closeOne(t, base, out, "g")
	if !strings.Contains(tr.Error, "before the turn finished") {
		t.Errorf("recorded error %q; want the turn's: it never got a finish reason", tr.Error)
	}
	if last := tr.Messages[len(tr.Messages)-1]; last.Role != "assistant" || last.Content != "Hel" {
		t.Errorf("recorded turn %+v; want the partial \"Hel\"", last)
	}
}

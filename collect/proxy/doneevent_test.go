package proxy_test

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A stream that ends at [DONE] without a finish reason: the agent, whose
// SDK stops at [DONE], posts its reward while upstream has not yet closed
// the connection; the reward finds the turn recorded, with the error that
// it never finished.
func TestProxyStreamDoneRecordedBeforeAgentReadsIt(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		event(w, chunk("Hel", 5, ""))
		event(w, "[DONE]")
		select { // the connection stays open a while after [DONE]
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer up.Close()
	defer close(release)
	out := t.TempDir()
	base := proxyTo(t, up.URL, out)

	req := mustRequest(t, http.MethodPost, base+"/v1/chat/completions", `{"model":"agent","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	req.Header.Set("X-Hone-Trajectory", "t1")
	req.Header.Set("X-Hone-Group", "g")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before [DONE]: %v", err)
		}
		if line == "data: [DONE]\n" {
			break
		}
	}
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

package proxy_test

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// An agent whose stream ends in upstream's error event (the SDKs raise
// there) posts its reward, with the error, while upstream still holds the
// stream open: the reward finds the turn recorded, and the trajectory
// keeps upstream's error, as a reward after a finish reason finds its
// turn.
func TestProxyStreamErrorEventRecordedBeforeAgentReadsIt(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		event(w, chunk("Hel", 5, ""))
		event(w, `{"error":{"message":"engine failed","type":"server_error"}}`)
		select { // upstream keeps the stream open a while after its error
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
			t.Fatalf("stream ended before the error event: %v", err)
		}
		if strings.Contains(line, "engine failed") {
			break
		}
	}
	// The agent saw the error: it gives up on the episode and says so.
	status, msg := do(t, mustRequest(t, http.MethodPost, base+"/hone/trajectories/t1/reward", `{"reward":0,"error":"model call failed"}`))
	if status != http.StatusNoContent {
		t.Fatalf("reward after the error event: %d %s; want 204, the turn recorded", status, msg)
	}
	tr := closeOne(t, base, out, "g")
	if !strings.Contains(tr.Error, "upstream error mid-stream: engine failed") || !strings.Contains(tr.Error, "model call failed") {
		t.Errorf("recorded error %q; want upstream's and the agent's", tr.Error)
	}
	if last := tr.Messages[len(tr.Messages)-1]; last.Role != "assistant" || last.Content != "Hel" {
		t.Errorf("recorded turn %+v; want the partial \"Hel\"", last)
	}
}

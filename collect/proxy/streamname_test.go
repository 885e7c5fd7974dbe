package proxy_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A streamed turn whose tool call came without a function name (here a
// server that numbers its calls from 1, so call 0 never gets one) is
// recorded with its error, as any stream that went wrong; the group it
// belongs to is still written.
func TestProxyStreamToolCallWithoutName(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		event(w, `{"model":"agent@7","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_a","type":"function","function":{"name":"weather","arguments":"{}"}}]},"token_ids":[7],"logprobs":{"content":[{"token":"x","logprob":-1}]},"finish_reason":"tool_calls"}]}`)
		event(w, "[DONE]")
	}))
	defer up.Close()
	out := t.TempDir()
	base := proxyTo(t, up.URL, out)
	chat(t, base, `{"model":"agent","stream":true,"messages":[{"role":"user","content":"hi"}]}`, "a", "g")
	if status, msg := closeGroup(t, base, "g"); status != http.StatusNoContent {
		t.Fatalf("close: %d %s", status, msg)
	}
	gs := readOut(t, out)
	if len(gs) != 1 {
		t.Fatalf("groups %+v", gs)
	}
	if tr := gs[0].Trajectories[0]; !strings.Contains(tr.Error, "no function name") {
		t.Errorf("error %q, want the turn's", tr.Error)
	}
}

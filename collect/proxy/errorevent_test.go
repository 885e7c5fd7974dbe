package proxy_test

import (
	"net/http"
	"strings"
	"testing"
)

// An agent whose stream ends in upstream's error event (the SDKs raise
// there) posts its reward, with the error, while upstream still holds the
// stream open: the reward finds the turn recorded, and the trajectory
// keeps upstream's error, as a reward after a finish reason finds its
// turn.
func TestProxyStreamErrorEventRecordedBeforeAgentReadsIt(t *testing.T) {
	base, out := streamThenHold(t, `{"error":{"message":"engine failed","type":"server_error"}}`, func(line string) bool { return strings.Contains(line, "engine failed") })
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

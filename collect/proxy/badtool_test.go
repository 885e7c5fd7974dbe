package proxy_test

import (
	"net/http"
	"strings"
	"testing"
)

// A tool the proxy could not write (no function name: the Responses API's
// flat shape sent to chat completions, say) is refused with the request,
// naming it, as a tool call without a name is, rather than recorded into a
// group that can then never be written.
func TestProxyToolWithoutName(t *testing.T) {
	up, _, _ := upstream(t)
	base := proxyTo(t, up.URL, t.TempDir())
	status, msg := chat(t, base, `{"model":"agent","messages":[{"role":"user","content":"Weather in Oslo?"}],`+
		`"tools":[{"type":"function","name":"weather","parameters":{"type":"object"}}]}`, "a", "g")
	if status == http.StatusBadRequest && strings.Contains(msg, "tools[0]") {
		return // refused, naming the tool
	}
	if status != http.StatusOK {
		t.Fatalf("chat: %d %s", status, msg)
	}
	// Recorded: then the group must be writable.
	if status, msg := closeGroup(t, base, "g"); status != http.StatusNoContent {
		t.Fatalf("the request was taken and recorded, but its group cannot be written: close: %d %s", status, msg)
	}
}

// A reward body with a key the route does not know (a typo of "reward")
// is a 400 naming it, as a close body's is, not a trajectory recorded
// without its reward.
func TestProxyRewardUnknownKey(t *testing.T) {
	up, _, _ := upstream(t)
	base := proxyTo(t, up.URL, t.TempDir())
	runAgent(t, base+"/v1", "a", "g")
	status, msg := do(t, mustRequest(t, http.MethodPost, base+"/hone/trajectories/a/reward", `{"rewrd":1}`))
	if status != http.StatusBadRequest || !strings.Contains(msg, "rewrd") {
		t.Fatalf("reward with a misspelt key: %d %s, want 400 naming it", status, msg)
	}
	if status, msg := do(t, mustRequest(t, http.MethodPost, base+"/hone/trajectories/a/reward", `{"reward":1}`)); status != http.StatusNoContent {
		t.Fatalf("the reward after it: %d %s", status, msg)
	}
}

// A null metric, in a reward or in a group's close body, is a 400 naming
// it (it was stored as 0, a value no one posted); the reward after it is
// taken.
func TestProxyNullMetric(t *testing.T) {
	up, _, _ := upstream(t)
	base := proxyTo(t, up.URL, t.TempDir())
	runAgent(t, base+"/v1", "a", "g")
	status, msg := do(t, mustRequest(t, http.MethodPost, base+"/hone/trajectories/a/reward", `{"reward":1,"metrics":{"turns":null}}`))
	if status != http.StatusBadRequest || !strings.Contains(msg, `turns`) || !strings.Contains(msg, "null") {
		t.Fatalf("reward with a null metric: %d %s, want 400 naming it", status, msg)
	}
	if status, msg := do(t, mustRequest(t, http.MethodPost, base+"/hone/trajectories/a/reward", `{"reward":1,"metrics":{"turns":3}}`)); status != http.StatusNoContent {
		t.Fatalf("the reward after it: %d %s", status, msg)
	}
	status, msg = do(t, mustRequest(t, http.MethodPost, base+"/hone/groups/g/close", `{"metrics":{"spread":null}}`))
	if status != http.StatusBadRequest || !strings.Contains(msg, `spread`) || !strings.Contains(msg, "null") {
		t.Fatalf("close with a null group metric: %d %s, want 400 naming it", status, msg)
	}
}

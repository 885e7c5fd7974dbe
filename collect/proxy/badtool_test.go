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

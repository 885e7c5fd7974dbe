package proxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect/proxy"
)

// A tool the proxy could not write (no function name: the Responses API's
// flat shape sent to chat completions, say) is refused with the request,
// naming it, as a tool call without a name is, rather than recorded into a
// group that can then never be written.
func TestProxyToolWithoutName(t *testing.T) {
	up, _, _ := upstream(t)
	p, err := proxy.New(proxy.Options{Upstream: up.URL + "/v1", OutDir: t.TempDir(), Run: "px"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	body := `{"model":"agent","messages":[{"role":"user","content":"Weather in Oslo?"}],` +
		`"tools":[{"type":"function","name":"weather","parameters":{"type":"object"}}]}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Hone-Trajectory", "a")
	req.Header.Set("X-Hone-Group", "g")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusBadRequest && strings.Contains(string(msg), "tools[0]") {
		return // refused, naming the tool
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("chat: %s %s", resp.Status, msg)
	}
	// Recorded: then the group must be writable.
	resp, err = http.Post(srv.URL+"/hone/groups/g/close", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("the request was taken and recorded, but its group cannot be written: close: %s %s", resp.Status, msg)
	}
}

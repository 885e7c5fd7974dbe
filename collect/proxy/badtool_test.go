package proxy_test

import (
	"bytes"
	"log/slog"
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

// A null metric (Python's None, "does not apply"), in a reward or in a
// group's close body, is left out of the row, as hone-collect's stdio
// environment leaves it out: every mean over a run's rows reads a metric
// a row lacks as not reported. It was a 400, which lost the reward posted
// with it (the trajectory was written "not closed"). The proxy's log says
// so once per metric name, not once per POST.
func TestProxyNullMetric(t *testing.T) {
	up, _, _ := upstream(t)
	out := t.TempDir()
	var logs bytes.Buffer
	p, err := proxy.New(proxy.Options{Upstream: up.URL + "/v1", OutDir: out, Run: "px", Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	base := srv.URL
	for _, tid := range []string{"a", "b"} {
		runAgent(t, base+"/v1", tid, "g")
		if status, msg := do(t, mustRequest(t, http.MethodPost, base+"/hone/trajectories/"+tid+"/reward", `{"reward":1,"metrics":{"turns":2,"overlap":null}}`)); status != http.StatusNoContent {
			t.Fatalf("reward of %s with a null metric: %d %s, want 204", tid, status, msg)
		}
	}
	if status, msg := do(t, mustRequest(t, http.MethodPost, base+"/hone/groups/g/close", `{"metrics":{"difficulty":3,"spread":null}}`)); status != http.StatusNoContent {
		t.Fatalf("close with a null group metric: %d %s, want 204", status, msg)
	}
	gs := readOut(t, out)
	if len(gs) != 1 || len(gs[0].Trajectories) != 2 {
		t.Fatalf("groups %+v; want g of two trajectories", gs)
	}
	for _, tr := range gs[0].Trajectories {
		if _, ok := tr.Metrics["overlap"]; ok || tr.Metrics["turns"] != 2 || tr.Reward == nil || *tr.Reward != 1 {
			t.Errorf("trajectory %s: reward %v, metrics %v; want reward 1, turns 2, no overlap", tr.ID, tr.Reward, tr.Metrics)
		}
	}
	if _, ok := gs[0].Metrics["spread"]; ok || gs[0].Metrics["difficulty"] != 3 {
		t.Errorf("group metrics %v; want difficulty 3, no spread", gs[0].Metrics)
	}
	t.Log(logs.String())
	if n := strings.Count(logs.String(), "overlap"); n != 1 || strings.Count(logs.String(), "spread") != 1 || !strings.Contains(logs.String(), "null") {
		t.Errorf("log %q names overlap %d times; want one warning each for overlap and spread, saying null", logs.String(), n)
	}
}

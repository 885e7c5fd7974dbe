package proxy_test

import (
	"net/http"
	"strings"
	"testing"
)

// A second reward for a trajectory that already has one is refused with
// a 409 naming it, and the file keeps the first: a retried or repeated
// POST must not silently replace the reward the agent gave.
func TestProxySecondRewardRefused(t *testing.T) {
	up, _, _ := upstream(t)
	out := t.TempDir()
	base := proxyTo(t, up.URL, out)
	runAgent(t, base+"/v1", "t1", "g")
	url := base + "/hone/trajectories/t1/reward"
	if status, msg := do(t, mustRequest(t, http.MethodPost, url, `{"reward":1,"metrics":{"turns":2}}`)); status != http.StatusNoContent {
		t.Fatalf("first reward: %d %s", status, msg)
	}
	status, msg := do(t, mustRequest(t, http.MethodPost, url, `{"reward":0,"metrics":{"turns":9}}`))
	if status != http.StatusConflict || !strings.Contains(msg, `trajectory \"t1\" already has its reward`) {
		t.Fatalf("second reward: %d %s, want 409 naming t1", status, msg)
	}
	tr := closeOne(t, base, out, "g")
	if tr.Reward == nil || *tr.Reward != 1 || tr.Metrics["turns"] != 2 || tr.Error != "" {
		t.Errorf("recorded reward %v, metrics %v, error %q; want the first POST's 1 and turns 2", tr.Reward, tr.Metrics, tr.Error)
	}
}

package proxy_test

import (
	"net/http"
	"strings"
	"testing"
)

// A NaN or Infinity in a reward or close body, as Python's json.dumps
// writes float('nan') by default, is a 400 naming the field and saying
// that JSON has no NaN: it was encoding/json's "invalid character 'N'
// looking for beginning of value", which named neither. The trajectory
// stays open, and a good reward posted after is recorded.
func TestProxyNaNNamed(t *testing.T) {
	up, _, _ := upstream(t)
	out := t.TempDir()
	base := proxyTo(t, up.URL, out)
	runAgent(t, base+"/v1", "t1", "g")
	reward := base + "/hone/trajectories/t1/reward"
	for _, tc := range []struct{ url, body, want string }{
		{reward, `{"reward": NaN}`, `reward is NaN`},
		{reward, `{"reward": Infinity}`, `reward is Infinity`},
		{reward, `{"reward": -Infinity}`, `reward is -Infinity`},
		{reward, `{"reward": 1, "metrics": {"turns": 2, "acc": NaN}}`, `metrics[\"acc\"] is NaN`},
		{reward, `{"reward": 1, "metadata": {"tags": [1, {"a": 2}, NaN]}}`, `metadata[\"tags\"][2] is NaN`},
		{base + "/hone/groups/g/close", `{"metrics": {"spread": NaN}}`, `metrics[\"spread\"] is NaN`},
	} {
		status, msg := do(t, mustRequest(t, http.MethodPost, tc.url, tc.body))
		if status != http.StatusBadRequest || !strings.Contains(msg, tc.want) || !strings.Contains(msg, "JSON has no NaN") || strings.Contains(msg, "invalid character") {
			t.Errorf("POST %s: %d %s; want 400 saying %s and that JSON has no NaN", tc.body, status, msg, tc.want)
		}
	}
	if status, msg := do(t, mustRequest(t, http.MethodPost, reward, `{"reward":0.5}`)); status != http.StatusNoContent {
		t.Fatalf("good reward after the NaN ones: %d %s", status, msg)
	}
	tr := closeOne(t, base, out, "g")
	if tr.Reward == nil || *tr.Reward != 0.5 {
		t.Errorf("recorded reward %v; want 0.5", tr.Reward)
	}
}

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

// Metrics posted as true or false (a JavaScript agent's solved === true,
// as OpenPipe ART's Trajectory.metrics allows bools) are 1 and 0, in a
// reward and in a group's close body; they were refused with 400, "cannot
// unmarshal bool into Go struct field".
func TestProxyBoolMetricsAreOneOrZero(t *testing.T) {
	up, _, _ := upstream(t)
	out := t.TempDir()
	base := proxyTo(t, up.URL, out)
	runAgent(t, base+"/v1", "t1", "g")
	url := base + "/hone/trajectories/t1/reward"
	if status, msg := do(t, mustRequest(t, http.MethodPost, url, `{"reward":1,"metrics":{"solved":true,"gave_up":false,"turns":2}}`)); status != http.StatusNoContent {
		t.Fatalf("reward: %d %s", status, msg)
	}
	if status, msg := do(t, mustRequest(t, http.MethodPost, base+"/hone/groups/g/close", `{"metrics":{"hard":true}}`)); status != http.StatusNoContent {
		t.Fatalf("close: %d %s", status, msg)
	}
	gs := readOut(t, out)
	if len(gs) != 1 || len(gs[0].Trajectories) != 1 {
		t.Fatalf("groups %+v; want g of one trajectory", gs)
	}
	g, tr := gs[0], gs[0].Trajectories[0]
	if m := tr.Metrics; len(m) != 3 || m["solved"] != 1 || m["gave_up"] != 0 || m["turns"] != 2 {
		t.Errorf("recorded metrics %v; want solved 1, gave_up 0, turns 2", m)
	}
	if g.Metrics["hard"] != 1 || len(g.Metrics) != 1 {
		t.Errorf("group metrics %v; want hard 1", g.Metrics)
	}
}

// A metric that is neither a number nor true/false, in a reward or in a
// group's close body, is a 400 naming the metric and its value: it named
// the value alone, as though it were the metric ("metric \"yes\" is not a
// number"), leaving the agent's author to guess which metric.
func TestProxyBadMetricNamed(t *testing.T) {
	up, _, _ := upstream(t)
	base := proxyTo(t, up.URL, t.TempDir())
	runAgent(t, base+"/v1", "t1", "g")
	for _, tc := range []struct{ url, body, value string }{
		{base + "/hone/trajectories/t1/reward", `{"reward":1,"metrics":{"turns":2,"solved":"yes"}}`, `"yes"`},
		{base + "/hone/trajectories/t1/reward", `{"reward":1,"metrics":{"solved":{"value":1}}}`, `{"value":1}`},
		{base + "/hone/groups/g/close", `{"metrics":{"solved":"true"}}`, `"true"`},
	} {
		status, msg := do(t, mustRequest(t, http.MethodPost, tc.url, tc.body))
		if status != http.StatusBadRequest || !strings.Contains(msg, `\"solved\"`) || !strings.Contains(msg, strings.ReplaceAll(tc.value, `"`, `\"`)) {
			t.Errorf("POST %s: %d %s; want 400 naming the metric solved and its value %s", tc.body, status, msg, tc.value)
		}
	}
}

// A reward that is not a number (a string, a boolean, one too large for
// a float64) or an error that is not a string is a 400 naming the field
// and its value, as a bad metric's is; it was encoding/json's "cannot
// unmarshal … into Go struct field .reward of type float64". A boolean
// reward is refused, not read as 1 or 0 as a metric is: OpenPipe ART's
// Trajectory.reward is a float, where its metrics name bool. The
// trajectory stays open, and a good reward posted after is recorded.
func TestProxyBadRewardNamed(t *testing.T) {
	up, _, _ := upstream(t)
	out := t.TempDir()
	base := proxyTo(t, up.URL, out)
	runAgent(t, base+"/v1", "t1", "g")
	url := base + "/hone/trajectories/t1/reward"
	for _, tc := range []struct{ body, want string }{
		{`{"reward":"yes"}`, `reward is \"yes\": want a number`},
		{`{"reward":"0.5"}`, `reward is \"0.5\": want a number`},
		{`{"reward":true}`, `reward is true: want a number`},
		{`{"reward":[1]}`, `reward is [1]: want a number`},
		{`{"reward":1e999}`, `reward is 1e999: want a number`},
		{`{"reward":1,"error":5}`, `error is 5: want a string`},
		{`{"reward":1,"error":{"msg":"x"}}`, `error is {\"msg\":\"x\"}: want a string`},
	} {
		status, msg := do(t, mustRequest(t, http.MethodPost, url, tc.body))
		if status != http.StatusBadRequest || !strings.Contains(msg, tc.want) || strings.Contains(msg, "Go struct") {
			t.Errorf("POST %s: %d %s; want 400 saying %s", tc.body, status, msg, tc.want)
		}
	}
	if status, msg := do(t, mustRequest(t, http.MethodPost, url, `{"reward":0.5,"error":null}`)); status != http.StatusNoContent {
		t.Fatalf("good reward after the bad ones: %d %s", status, msg)
	}
	tr := closeOne(t, base, out, "g")
	if tr.Reward == nil || *tr.Reward != 0.5 || tr.Error != "" {
		t.Errorf("recorded reward %v, error %q; want 0.5 and none", tr.Reward, tr.Error)
	}
}

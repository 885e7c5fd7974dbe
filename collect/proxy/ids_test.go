package proxy_test

import (
	"net/http"
	"strings"
	"testing"
)

// An id with a "/" cannot be named in the reward and close routes' paths
// (a percent-encoded one is decoded before routing, and the POST went on
// upstream, which answered "no route"): a trajectory recorded under it
// could never get its reward, and was written "not closed". The chat
// request that names it is refused with a 400 naming the header, before
// anything is sent upstream.
func TestProxyRefusesIDsWithSlash(t *testing.T) {
	up, _, sent := upstream(t)
	out := t.TempDir()
	base := proxyTo(t, up.URL, out)
	body := `{"model":"agent","messages":[{"role":"user","content":"hi"}]}`
	for _, c := range []struct{ tid, gid, header string }{
		{"a/b", "g", "X-Hone-Trajectory"},
		{"t", "g/1", "X-Hone-Group"},
	} {
		status, msg := chat(t, base, body, c.tid, c.gid)
		if status != http.StatusBadRequest || !strings.Contains(msg, c.header) {
			t.Errorf("trajectory %q, group %q: %d %s; want 400 naming %s", c.tid, c.gid, status, msg, c.header)
		}
	}
	if n := len(sent()); n != 0 {
		t.Errorf("%d requests went upstream; want none", n)
	}
	// The routes still find ids with other characters, percent-encoded.
	if status, msg := chat(t, base, body, "t 1?#%", "g"); status != http.StatusOK {
		t.Fatalf("chat: %d %s", status, msg)
	}
	if status, msg := do(t, mustRequest(t, http.MethodPost, base+"/hone/trajectories/t%201%3F%23%25/reward", `{"reward":1}`)); status != http.StatusNoContent {
		t.Fatalf("reward: %d %s", status, msg)
	}
	if tr := closeOne(t, base, out, "g"); tr.ID != "t 1?#%" || tr.Reward == nil || *tr.Reward != 1 {
		t.Errorf("recorded %q with reward %v; want t 1?#%% with 1", tr.ID, tr.Reward)
	}
}

// A trajectory id names one episode: reused in another group while the
// first is still open (an attempt id like "<scenario>-<k>" reused the next
// step, when last step's group still waits for a reward), its reward POST
// went to whichever of the two records Go's map order found first, so one
// run's reward could land on the other step's episode. The second group's
// request is refused with a 409 naming the group that holds the id.
func TestProxyTrajectoryIDInTwoOpenGroups(t *testing.T) {
	up, _, _ := upstream(t)
	out := t.TempDir()
	base := proxyTo(t, up.URL, out)
	body := `{"model":"agent","messages":[{"role":"user","content":"hi"}]}`
	if status, msg := chat(t, base, body, "t1", "step1"); status != http.StatusOK {
		t.Fatalf("chat: %d %s", status, msg)
	}
	status, msg := chat(t, base, body, "t1", "step2")
	if status != http.StatusConflict || !strings.Contains(msg, "step1") {
		t.Fatalf("t1 in a second open group: %d %s; want 409 naming step1", status, msg)
	}
	if status, msg := do(t, mustRequest(t, http.MethodPost, base+"/hone/trajectories/t1/reward", `{"reward":1}`)); status != http.StatusNoContent {
		t.Fatalf("reward: %d %s", status, msg)
	}
	if tr := closeOne(t, base, out, "step1"); tr.Reward == nil || *tr.Reward != 1 || tr.Error != "" {
		t.Errorf("step1's t1: reward %v, error %q; want 1", tr.Reward, tr.Error)
	}
	// Once the group that held it is written, the id stays taken: the
	// folder would hold it twice, which the next stage refuses.
	if status, msg := chat(t, base, body, "t1", "step2"); status != http.StatusConflict || !strings.Contains(msg, "px-000001.parquet") {
		t.Fatalf("t1 after step1 was written: %d %s; want 409 naming px-000001.parquet", status, msg)
	}
}

package proxy_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// A proxy started again on the folder an earlier run wrote into (a
// restart after a crash, the next round of the same run) numbers its
// files after the ones there: the groups written before are kept.
func TestProxyRestartKeepsEarlierGroups(t *testing.T) {
	up, _, _ := upstream(t)
	out := t.TempDir()
	for _, gid := range []string{"round1", "round2"} {
		base := proxyTo(t, up.URL, out) // a new proxy each round
		runAgent(t, base+"/v1", gid+"-a", gid)
		if status, msg := closeGroup(t, base, gid); status != http.StatusNoContent {
			t.Fatalf("close %s: %d %s", gid, status, msg)
		}
	}
	var ids []string
	for _, g := range readOut(t, out) {
		ids = append(ids, g.ID)
	}
	if !slices.Equal(ids, []string{"round1", "round2"}) {
		t.Fatalf("the files hold groups %q, want round1 and round2 (the second run overwrote the first's file)", ids)
	}
}

// A proxy started again on a folder an earlier one wrote into took the
// ids the files there hold: the folder then held a trajectory or group id
// twice, which hone-inspect, hone-score and hone-train refuse. It reads
// those ids at start and answers a chat request naming one with a 409
// that names the file holding it.
func TestProxyRestartRefusesWrittenIDs(t *testing.T) {
	up, _, sent := upstream(t)
	out := t.TempDir()
	body := `{"model":"agent","messages":[{"role":"user","content":"hi"}]}`
	base := proxyTo(t, up.URL, out)
	if status, msg := chat(t, base, body, "a", "g1"); status != http.StatusOK {
		t.Fatalf("chat: %d %s", status, msg)
	}
	if status, msg := closeGroup(t, base, "g1"); status != http.StatusNoContent {
		t.Fatalf("close g1: %d %s", status, msg)
	}
	before := len(sent())
	base = proxyTo(t, up.URL, out) // the restart
	for _, c := range []struct{ tid, gid string }{{"a", "g2"}, {"b", "g1"}} {
		status, msg := chat(t, base, body, c.tid, c.gid)
		if status != http.StatusConflict || !strings.Contains(msg, "px-000001.parquet") {
			t.Errorf("trajectory %q, group %q: %d %s; want 409 naming px-000001.parquet", c.tid, c.gid, status, msg)
		}
	}
	if n := len(sent()) - before; n != 0 {
		t.Errorf("%d refused requests went upstream", n)
	}
	if status, msg := chat(t, base, body, "b", "g2"); status != http.StatusOK {
		t.Fatalf("new ids: %d %s", status, msg)
	}
	if status, msg := closeGroup(t, base, "g2"); status != http.StatusNoContent {
		t.Fatalf("close g2: %d %s", status, msg)
	}
	if gs := readOut(t, out); len(gs) != 2 { // readOut fails on an id twice
		t.Errorf("%d groups, want 2", len(gs))
	}
}

package proxy_test

import (
	"net/http"
	"slices"
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

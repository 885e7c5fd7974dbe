package proxy_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/hone-rl/hone/collect/proxy"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/trajectory"
)

// A proxy started again on the folder an earlier run wrote into (a
// restart after a crash, the next round of the same run) numbers its
// files after the ones there: the groups written before are kept.
func TestProxyRestartKeepsEarlierGroups(t *testing.T) {
	up, _, _ := upstream(t)
	out := t.TempDir()
	for _, gid := range []string{"round1", "round2"} {
		p, err := proxy.New(proxy.Options{Upstream: up.URL + "/v1", OutDir: out})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(p)
		runAgent(t, srv.URL+"/v1", gid+"-a", gid)
		resp, err := http.Post(srv.URL+"/hone/groups/"+gid+"/close", "application/json", nil)
		srv.Close()
		if err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("close %s: %v %v", gid, err, resp.Status)
		}
	}
	names, err := fileset.List(context.Background(), out, ".parquet")
	if err != nil {
		t.Fatal(err)
	}
	gs, err := trajectory.ReadAll(context.Background(), fileset.Files(names...))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, g := range gs {
		ids = append(ids, g.ID)
	}
	if !slices.Equal(ids, []string{"round1", "round2"}) {
		t.Fatalf("files %q hold groups %q, want round1 and round2 (the second run overwrote the first's file)", names, ids)
	}
}

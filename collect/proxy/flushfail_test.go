package proxy_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect/proxy"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/trajectory"
)

// A group whose file cannot be written (a full disk, a folder gone, an
// object store that failed) stays open: the close that failed answers
// 500, and closing again once the output is writable writes it whole.
func TestProxyFailedFlushKeepsGroup(t *testing.T) {
	up, _, _ := upstream(t)
	out := filepath.Join(t.TempDir(), "out")
	p, err := proxy.New(proxy.Options{Upstream: up.URL + "/v1", OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	runAgent(t, srv.URL+"/v1", "a", "g")
	runAgent(t, srv.URL+"/v1", "b", "g")
	for _, tid := range []string{"a", "b"} {
		resp, err := http.Post(srv.URL+"/hone/trajectories/"+tid+"/reward", "application/json", strings.NewReader(`{"reward":1}`))
		if err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("reward %s: %v %v", tid, err, resp.Status)
		}
	}
	// The output folder is replaced by a file: the flush cannot write.
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(srv.URL+"/hone/groups/g/close", "application/json", nil)
	if err != nil || resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("close into a file: %v %v, want 500", err, resp.Status)
	}
	resp.Body.Close()
	// The output is writable again: the group was kept and is written.
	if err := os.Remove(out); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	resp, err = http.Post(srv.URL+"/hone/groups/g/close", "application/json", nil)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("close again: %v %v, want 204 (the group was lost by the failed flush)", err, resp.Status)
	}
	files, _ := filepath.Glob(filepath.Join(out, "*.parquet"))
	gs, err := trajectory.ReadAll(context.Background(), fileset.Files(files...))
	if err != nil || len(gs) != 1 || len(gs[0].Trajectories) != 2 || *gs[0].Trajectories[1].Reward != 1 {
		t.Fatalf("after the failed flush: %v %+v", err, gs)
	}
}

package proxy_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A group whose file cannot be written (a full disk, a folder gone, an
// object store that failed) stays open: the close that failed answers
// 500, and closing again once the output is writable writes it whole.
func TestProxyFailedFlushKeepsGroup(t *testing.T) {
	up, _, _ := upstream(t)
	out := filepath.Join(t.TempDir(), "out")
	base := proxyTo(t, up.URL, out)
	runAgent(t, base+"/v1", "a", "g")
	runAgent(t, base+"/v1", "b", "g")
	for _, tid := range []string{"a", "b"} {
		resp, err := http.Post(base+"/hone/trajectories/"+tid+"/reward", "application/json", strings.NewReader(`{"reward":1}`))
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
	if status, msg := closeGroup(t, base, "g"); status != http.StatusInternalServerError {
		t.Fatalf("close into a file: %d %s, want 500", status, msg)
	}
	// The output is writable again: the group was kept and is written.
	if err := os.Remove(out); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if status, msg := closeGroup(t, base, "g"); status != http.StatusNoContent {
		t.Fatalf("close again: %d %s, want 204 (the group was lost by the failed flush)", status, msg)
	}
	if gs := readOut(t, out); len(gs) != 1 || len(gs[0].Trajectories) != 2 || *gs[0].Trajectories[1].Reward != 1 {
		t.Fatalf("after the failed flush: %+v", gs)
	}
}

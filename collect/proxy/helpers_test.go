package proxy_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect/proxy"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/trajectory"
)

// proxyTo serves, for the test's life, a proxy of run "px" in front of the
// upstream server at upURL, writing into out; it returns the proxy's URL.
func proxyTo(t *testing.T, upURL, out string) string {
	t.Helper()
	p, err := proxy.New(proxy.Options{Upstream: upURL + "/v1", OutDir: out, Run: "px"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv.URL
}

// chat posts a chat completion request body through the proxy at base as
// trajectory tid of group gid, and returns the status and what the agent
// read.
func chat(t *testing.T, base, body, tid, gid string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Hone-Trajectory", tid)
	req.Header.Set("X-Hone-Group", gid)
	return do(t, req)
}

// closeGroup closes group gid at the proxy at base, and returns the status
// and the answer's body.
func closeGroup(t *testing.T, base, gid string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/hone/groups/"+gid+"/close", nil)
	if err != nil {
		t.Fatal(err)
	}
	return do(t, req)
}

// closeOne closes group gid, which must then be the one group written to
// out, of one trajectory, and returns that trajectory as recorded.
func closeOne(t *testing.T, base, out, gid string) trajectory.Trajectory {
	t.Helper()
	if status, msg := closeGroup(t, base, gid); status != http.StatusNoContent {
		t.Fatalf("close %s: %d %s", gid, status, msg)
	}
	gs := readOut(t, out)
	if len(gs) != 1 || len(gs[0].Trajectories) != 1 {
		t.Fatalf("groups %+v; want %s of one trajectory", gs, gid)
	}
	return gs[0].Trajectories[0]
}

// mustRequest is a JSON request of method to url with body.
func mustRequest(t *testing.T, method, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

// do sends req and returns the status and the answer's body.
func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// readOut reads the groups of every file in out.
func readOut(t *testing.T, out string) []trajectory.Group {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(out, "*.parquet"))
	gs, err := trajectory.ReadAll(context.Background(), fileset.Files(files...))
	if err != nil {
		t.Fatal(err)
	}
	return gs
}

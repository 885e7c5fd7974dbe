package proxy_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hone-rl/hone/collect/proxy"
)

// TestProxyForwardsEscapedPath: an agent's path reaches the upstream
// escaped as the agent sent it. The proxy forwarded the decoded path: a
// model id's %2F (GET /v1/models/Qwen%2FQwen2.5) became a path separator
// upstream, and a %25 or %7F became a stray '%' or control byte the
// upstream URL failed to parse with, answered 502 quoting url.Parse's
// error, the password of --upstream's userinfo and all.
func TestProxyForwardsEscapedPath(t *testing.T) {
	var mu sync.Mutex
	var got []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.EscapedPath())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"object":"list","data":[]}`))
	}))
	t.Cleanup(up.Close)
	upURL := strings.Replace(up.URL, "http://", "http://hone:s3cret-pw@", 1)
	p, err := proxy.New(proxy.Options{Upstream: upURL + "/v1", OutDir: t.TempDir(), Run: "px"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	for _, path := range []string{"/v1/models/Qwen%2FQwen2.5-0.5B", "/v1/models/a%25zz", "/v1/models/a%7F"} {
		mu.Lock()
		got = nil
		mu.Unlock()
		status, body := do(t, mustRequest(t, http.MethodGet, srv.URL+path, ""))
		if status != http.StatusOK {
			t.Errorf("GET %s: status %d (%s), want the upstream's 200", path, status, body)
		}
		if strings.Contains(body, "s3cret-pw") {
			t.Errorf("GET %s: answer shows the upstream's password: %s", path, body)
		}
		mu.Lock()
		if len(got) != 1 || got[0] != path {
			t.Errorf("GET %s: the upstream got %q, want the path as the agent escaped it", path, got)
		}
		mu.Unlock()
	}
}

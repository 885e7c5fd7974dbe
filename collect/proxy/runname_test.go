package proxy_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect/proxy"
)

// The run name makes the file names (<run>-000001.parquet). One with a
// "/" named files in a folder below the output folder, which a restarted
// proxy's numbering never looked in: its first group replaced the earlier
// run's first file. A run name that is not one (runfolder's rule) is
// refused at start, naming it.
func TestProxyRunNameIsAName(t *testing.T) {
	up, _, _ := upstream(t)
	out := t.TempDir()
	if err := os.MkdirAll(filepath.Join(out, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	body := `{"model":"agent","messages":[{"role":"user","content":"hi"}]}`
	var written []string
	for _, gid := range []string{"first", "second"} { // two proxy runs, one after the other
		p, err := proxy.New(proxy.Options{Upstream: up.URL + "/v1", OutDir: out, Run: "sub/x"})
		if err != nil {
			if !strings.Contains(err.Error(), `"sub/x"`) {
				t.Fatalf("run sub/x refused with %v; want the name in the error", err)
			}
			return // refused at start, naming it
		}
		srv := httptest.NewServer(p)
		if status, msg := chat(t, srv.URL, body, "t-"+gid, gid); status != http.StatusOK {
			t.Fatalf("chat: %d %s", status, msg)
		}
		status, msg := closeGroup(t, srv.URL, gid)
		srv.Close()
		written = append(written, gid)
		if status != http.StatusNoContent {
			t.Fatalf("close %s: %d %s", gid, status, msg)
		}
	}
	files, _ := filepath.Glob(filepath.Join(out, "sub", "*.parquet"))
	t.Errorf("run sub/x taken; groups %v closed into %d file(s) %v: the second replaced the first", written, len(files), files)
}

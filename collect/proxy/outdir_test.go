package proxy_test

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/hone-rl/hone/collect/proxy"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/trajectory"
)

// -o takes a file:// URL: the folder it names, with no "file:" folder
// made in the working directory. (cmd/hone-collect's
// TestProxyToObjectStore writes to an s3:// folder: this package may not
// import internal/fakes3d.)
func TestProxyOutputURLs(t *testing.T) {
	t.Chdir(t.TempDir())
	local := t.TempDir()
	for _, out := range []string{(&url.URL{Scheme: "file", Path: filepath.ToSlash(local)}).String()} {
		up, _, _ := upstream(t)
		p, err := proxy.New(proxy.Options{Upstream: up.URL + "/v1", OutDir: out, Run: "px"})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(p)
		runAgent(t, srv.URL+"/v1", "a", "g")
		resp, err := http.Post(srv.URL+"/hone/groups/g/close", "application/json", nil)
		srv.Close()
		if err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("%s: close: %v %v", out, err, resp.Status)
		}
		names, err := fileset.List(context.Background(), out, ".parquet")
		if err != nil || len(names) != 1 {
			t.Fatalf("%s holds %q, %v; want one file", out, names, err)
		}
		gs, err := trajectory.ReadAll(context.Background(), fileset.Files(names...))
		if err != nil || len(gs) != 1 || gs[0].ID != "g" || len(gs[0].Trajectories) != 1 {
			t.Fatalf("%s: groups %+v, %v", names[0], gs, err)
		}
	}
	if _, err := os.Stat(filepath.Join(local, "px-000001.parquet")); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat("file:"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a folder named after the URL's scheme: %v", err)
	}
	if _, err := proxy.New(proxy.Options{Upstream: "http://x/v1", OutDir: "file://elsewhere/x"}); err == nil {
		t.Error("a file URL of another host was taken")
	}
}

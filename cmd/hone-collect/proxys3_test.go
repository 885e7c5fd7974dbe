package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect/openaitest"
	"github.com/hone-rl/hone/collect/proxy"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/fakes3d"
)

// The recording proxy's -o may be an object-store folder: a closed group
// is uploaded whole, as an object the readers take like a local file.
func TestProxyToObjectStore(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	up := openaitest.New(func(openaitest.Request) openaitest.Reply { return openaitest.Reply{Content: "hi", Model: "m"} })
	t.Cleanup(up.Close)
	out := s3.URL("hone", "proxied")
	p, err := proxy.New(proxy.Options{Upstream: up.BaseURL(), OutDir: out, Run: "px"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hello"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Hone-Trajectory", "t1")
	req.Header.Set("X-Hone-Group", "g1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("chat: %v %v", err, resp)
	}
	resp.Body.Close()
	if resp, err = http.Post(srv.URL+"/hone/groups/g1/close", "application/json", nil); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("close: %v %v", err, resp)
	}
	names, err := fileset.List(context.Background(), out, ".parquet")
	if err != nil || len(names) != 1 || !strings.HasPrefix(names[0], "s3://hone/proxied/px-000001.parquet?") {
		t.Fatalf("%s holds %q, %v; want px-000001.parquet", out, names, err)
	}
	gs, err := trajectory.ReadAll(context.Background(), fileset.Files(names...))
	if err != nil || len(gs) != 1 || gs[0].ID != "g1" || len(gs[0].Trajectories) != 1 || gs[0].Trajectories[0].ID != "t1" {
		t.Fatalf("groups %+v, %v", gs, err)
	}
}

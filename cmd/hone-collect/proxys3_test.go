package main

import (
	"context"
	"io"
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

// proxyRound runs a recording proxy writing to out for one group: one
// chat call of trajectory tid in group gid, then the group's close.
func proxyRound(t *testing.T, upstream, out, tid, gid string) {
	t.Helper()
	p, err := proxy.New(proxy.Options{Upstream: upstream, OutDir: out, Run: "px"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hello"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Hone-Trajectory", tid)
	req.Header.Set("X-Hone-Group", gid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("chat: %v %v", err, resp)
	}
	resp.Body.Close()
	if resp, err = http.Post(srv.URL+"/hone/groups/"+gid+"/close", "application/json", nil); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("close: %v %v", err, resp)
	}
}

// The recording proxy's -o may be an object-store folder: a closed group
// is uploaded whole, as an object the readers take like a local file.
func TestProxyToObjectStore(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	up := openaitest.New(func(openaitest.Request) openaitest.Reply { return openaitest.Reply{Content: "hi", Model: "m"} })
	t.Cleanup(up.Close)
	out := s3.URL("hone", "proxied")
	proxyRound(t, up.BaseURL(), out, "t1", "g1")
	names, err := fileset.List(context.Background(), out, ".parquet")
	if err != nil || len(names) != 1 || !strings.HasPrefix(names[0], "s3://hone/proxied/px-000001.parquet?") {
		t.Fatalf("%s holds %q, %v; want px-000001.parquet", out, names, err)
	}
	gs, err := trajectory.ReadAll(context.Background(), fileset.Files(names...))
	if err != nil || len(gs) != 1 || gs[0].ID != "g1" || len(gs[0].Trajectories) != 1 || gs[0].Trajectories[0].ID != "t1" {
		t.Fatalf("groups %+v, %v", gs, err)
	}
}

// A proxy started again on an object-store folder an earlier run wrote
// into numbers its files after the ones there, as on a local folder.
// Before, it took the number from the listed URL's last "/"-element,
// which holds the URL's query ("px-000001.parquet?region=…", or a part of
// "?endpoint=http://…"), found none, and wrote px-000001.parquet again
// over the earlier run's groups.
func TestProxyRestartOnObjectStore(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	up := openaitest.New(func(openaitest.Request) openaitest.Reply { return openaitest.Reply{Content: "hi", Model: "m"} })
	t.Cleanup(up.Close)
	out := s3.URL("hone", "proxied")
	proxyRound(t, up.BaseURL(), out, "t1", "round1")
	proxyRound(t, up.BaseURL(), out, "t2", "round2")
	names, err := fileset.List(context.Background(), out, ".parquet")
	if err != nil {
		t.Fatal(err)
	}
	gs, err := trajectory.ReadAll(context.Background(), fileset.Files(names...))
	var ids []string
	for _, g := range gs {
		ids = append(ids, g.ID)
	}
	if err != nil || strings.Join(ids, " ") != "round1 round2" {
		t.Fatalf("%s holds %d files with groups %q, %v; want round1 and round2", out, len(names), ids, err)
	}
}

// A proxy started again on an object-store folder refuses the ids the
// files there hold, as on a local folder: it read them for a local folder
// only, so a restarted proxy took a trajectory or group id an earlier run
// wrote, and the folder then held it twice, which hone-inspect, hone-score
// and hone-train refuse.
func TestProxyRestartRefusesWrittenIDsOnObjectStore(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	up := openaitest.New(func(openaitest.Request) openaitest.Reply { return openaitest.Reply{Content: "hi", Model: "m"} })
	t.Cleanup(up.Close)
	out := s3.URL("hone", "proxied")
	proxyRound(t, up.BaseURL(), out, "t1", "round1")
	p, err := proxy.New(proxy.Options{Upstream: up.BaseURL(), OutDir: out, Run: "px"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	for _, c := range []struct{ tid, gid string }{{"t1", "round2"}, {"t2", "round1"}} {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hello"}]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Hone-Trajectory", c.tid)
		req.Header.Set("X-Hone-Group", c.gid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// The file is named as the user names it, without the query that
		// opens its bucket (endpoint, path style): that is the proxy's
		// configuration, noise to the agent that sent the id.
		if resp.StatusCode != http.StatusConflict || !strings.Contains(string(msg), "s3://hone/proxied/px-000001.parquet:") || strings.Contains(string(msg), "endpoint=") {
			t.Errorf("trajectory %q, group %q: %s %s; want 409 naming s3://hone/proxied/px-000001.parquet, without its query", c.tid, c.gid, resp.Status, msg)
		}
	}

	// A folder holding an id twice is refused at the start, naming both
	// files, as the user names them.
	ctx := context.Background()
	b, err := fileset.ReadFile(ctx, s3.URL("hone", "proxied/px-000001.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if err := fileset.WriteFile(ctx, s3.URL("hone", "proxied/px-000002.parquet"), b); err != nil {
		t.Fatal(err)
	}
	_, err = proxy.New(proxy.Options{Upstream: up.BaseURL(), OutDir: out, Run: "px"})
	if err == nil || !strings.Contains(err.Error(), "is in s3://hone/proxied/px-000001.parquet and again in s3://hone/proxied/px-000002.parquet (row 0)") || strings.Contains(err.Error(), "endpoint=") {
		t.Errorf("a folder holding an id twice: %v; want an error naming both files without their query", err)
	}
}

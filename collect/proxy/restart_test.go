package proxy_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/hone-rl/hone/collect/proxy"
	"github.com/hone-rl/hone/format/trajectory"
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

// A proxy started again on a folder an earlier one wrote into took the
// ids the files there hold: the folder then held a trajectory or group id
// twice, which hone-inspect, hone-score and hone-train refuse. It reads
// those ids at start and answers a chat request naming one with a 409
// that names the file holding it.
func TestProxyRestartRefusesWrittenIDs(t *testing.T) {
	up, _, sent := upstream(t)
	out := t.TempDir()
	body := `{"model":"agent","messages":[{"role":"user","content":"hi"}]}`
	base := proxyTo(t, up.URL, out)
	if status, msg := chat(t, base, body, "a", "g1"); status != http.StatusOK {
		t.Fatalf("chat: %d %s", status, msg)
	}
	if status, msg := closeGroup(t, base, "g1"); status != http.StatusNoContent {
		t.Fatalf("close g1: %d %s", status, msg)
	}
	before := len(sent())
	base = proxyTo(t, up.URL, out) // the restart
	for _, c := range []struct{ tid, gid string }{{"a", "g2"}, {"b", "g1"}} {
		status, msg := chat(t, base, body, c.tid, c.gid)
		if status != http.StatusConflict || !strings.Contains(msg, "px-000001.parquet") {
			t.Errorf("trajectory %q, group %q: %d %s; want 409 naming px-000001.parquet", c.tid, c.gid, status, msg)
		}
	}
	if n := len(sent()) - before; n != 0 {
		t.Errorf("%d refused requests went upstream", n)
	}
	if status, msg := chat(t, base, body, "b", "g2"); status != http.StatusOK {
		t.Fatalf("new ids: %d %s", status, msg)
	}
	if status, msg := closeGroup(t, base, "g2"); status != http.StatusNoContent {
		t.Fatalf("close g2: %d %s", status, msg)
	}
	if gs := readOut(t, out); len(gs) != 2 { // readOut fails on an id twice
		t.Errorf("%d groups, want 2", len(gs))
	}
}

// TestProxyStartReadsOnlyIDs: a proxy started on a folder decoded every
// row of every file there, conversations and all, to take two ids per
// row: on 2000 groups of 8 small trajectories that held its start for
// about 10 s (2 cores), growing with every group the run wrote. It reads
// the id columns alone; the proof here is a file whose messages column
// is unreadable, which the full decode refused: the proxy starts, and
// still refuses the ids the file holds.
func TestProxyStartReadsOnlyIDs(t *testing.T) {
	up, _, _ := upstream(t)
	out := t.TempDir()
	name := filepath.Join(out, "old-000001.parquet")
	r := 1.0
	g := trajectory.Group{ID: "g1", Trajectories: []trajectory.Trajectory{{Run: "old", GroupID: "g1", ID: "a", Env: "proxy", Reward: &r,
		Messages: []trajectory.Message{{Role: "user", Content: strings.Repeat("hello ", 1000)}, {Role: "assistant", Content: "hi"}}}}}
	if err := trajectory.WriteFile(context.Background(), name, []trajectory.Group{g}, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	smashColumn(t, name, "content")
	base := proxyTo(t, up.URL, out)
	body := `{"model":"agent","messages":[{"role":"user","content":"hi"}]}`
	for _, c := range []struct{ tid, gid string }{{"a", "g2"}, {"b", "g1"}} {
		if status, msg := chat(t, base, body, c.tid, c.gid); status != http.StatusConflict || !strings.Contains(msg, "old-000001.parquet") {
			t.Errorf("trajectory %q, group %q: %d %s; want 409 naming old-000001.parquet", c.tid, c.gid, status, msg)
		}
	}
}

// smashColumn overwrites the pages of the first column chunk whose path
// ends in leaf with bytes no page header starts with, leaving the footer
// and every other column as written.
func smashColumn(t *testing.T, name, leaf string) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range pf.Metadata().RowGroups[0].Columns {
		md := c.MetaData
		if md.PathInSchema[len(md.PathInSchema)-1] != leaf {
			continue
		}
		start := md.DataPageOffset
		if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < start {
			start = md.DictionaryPageOffset
		}
		for i := start; i < start+md.TotalCompressedSize; i++ {
			b[i] = 0xff
		}
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("%s: no column %q", name, leaf)
}

// TestProxyStartRefusesBadFolder: a folder the stages reading it would
// refuse (a file that is no trajectory file, an id in two files) stops
// the proxy at start, naming the files, rather than one more group being
// added to it.
func TestProxyStartRefusesBadFolder(t *testing.T) {
	group := func(gid string, tids ...string) trajectory.Group {
		g := trajectory.Group{ID: gid}
		for _, tid := range tids {
			g.Trajectories = append(g.Trajectories, trajectory.Trajectory{Run: "old", GroupID: gid, ID: tid, Env: "proxy",
				Messages: []trajectory.Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "hello"}}})
		}
		return g
	}
	for _, tc := range []struct {
		name   string
		files  [][]trajectory.Group // old-000001.parquet, old-000002.parquet, …
		junk   bool                 // old-000003.parquet is not Parquet
		errHas []string
	}{
		{"not-parquet", [][]trajectory.Group{{group("g1", "a")}}, true, []string{"old-000003.parquet", "not a readable trajectory file"}},
		{"trajectory-twice", [][]trajectory.Group{{group("g1", "a", "b")}, {group("g2", "c", "b")}}, false, []string{`"b"`, "old-000001.parquet", "old-000002.parquet"}},
		{"group-twice", [][]trajectory.Group{{group("g1", "a")}, {group("g1", "b")}}, false, []string{`"g1"`, "old-000001.parquet", "old-000002.parquet"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			for i, gs := range tc.files {
				if err := trajectory.WriteFile(context.Background(), filepath.Join(out, fmt.Sprintf("old-%06d.parquet", i+1)), gs, trajectory.WriterOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.junk {
				os.WriteFile(filepath.Join(out, "old-000003.parquet"), []byte("not parquet at all"), 0o644)
			}
			_, err := proxy.New(proxy.Options{Upstream: "http://127.0.0.1:1/v1", OutDir: out, Run: "px"})
			for _, s := range tc.errHas {
				if err == nil || !strings.Contains(err.Error(), s) {
					t.Fatalf("err %v; want it to name %s", err, s)
				}
			}
		})
	}
}

// A proxy started on a folder of earlier runs' files reads their ids
// under Run's context: stopped (a Ctrl-C), it ends there, before the
// first file, instead of reading every one, then listening, as it did.
func TestRestartScanStops(t *testing.T) {
	out := t.TempDir()
	for i := range 3 {
		gid := fmt.Sprintf("g%d", i)
		gs := []trajectory.Group{{ID: gid, Trajectories: []trajectory.Trajectory{{Run: "old", GroupID: gid, ID: gid + "-t", Env: "proxy",
			Messages: []trajectory.Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "hello"}}}}}}
		if err := trajectory.WriteFile(context.Background(), filepath.Join(out, fmt.Sprintf("old-%06d.parquet", i+1)), gs, trajectory.WriterOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := proxy.Run(ctx, proxy.Options{Upstream: "http://127.0.0.1:1/v1", OutDir: out, Run: "px", Listen: "127.0.0.1:0",
		OnListen: func(string) { t.Error("the proxy listened after the stop") }})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want the start stopped (context.Canceled)", err)
	}
}

package proxy_test

import (
	"context"
	"maps"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect/proxy"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/trajectory"
)

// TestPythonHelperSetsGroupFields: python/hone_proxy.py's close_group
// sends the group's metadata and metrics, which the proxy writes as the
// group's own fields; a metadata value that is not a scalar is refused in
// Python, before any request.
func TestPythonHelperSetsGroupFields(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		needTool(t, "python3 is not on PATH")
	}
	up, _, _ := upstream(t)
	out := t.TempDir()
	p, err := proxy.New(proxy.Options{Upstream: up.URL + "/v1", OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	runAgent(t, srv.URL+"/v1", "a", "g")
	helper, err := filepath.Abs(filepath.Join("..", "..", "python"))
	if err != nil {
		t.Fatal(err)
	}
	script := `import sys
sys.path.insert(0, sys.argv[1])
import hone_proxy
t = hone_proxy.Trajectory(group="g", id="a", base_url=sys.argv[2] + "/v1")
t.reward(1, metrics={"turns": 2})
try:
    t.close_group(metadata={"bad": {"deep": 1}})
except ValueError as e:
    print("refused:", e)
t.close_group(metadata={"scenario": "s1", "level": 3, "hard": True}, metrics={"difficulty": 2.5})
`
	cmd := exec.Command(py, "-c", script, helper, srv.URL)
	got, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(got), "refused: group metadata 'bad'") {
		t.Fatalf("python: %v\n%s", err, got)
	}
	files, _ := filepath.Glob(filepath.Join(out, "*.parquet"))
	gs, err := trajectory.ReadAll(context.Background(), fileset.Files(files...))
	if err != nil || len(gs) != 1 || *gs[0].Trajectories[0].Reward != 1 {
		t.Fatalf("written: %v %+v", err, gs)
	}
	if want := map[string]string{"scenario": "s1", "level": "3", "hard": "true"}; !maps.Equal(gs[0].Metadata, want) || !maps.Equal(gs[0].Metrics, map[string]float64{"difficulty": 2.5}) {
		t.Errorf("group fields %v %v, want %v and difficulty 2.5", gs[0].Metadata, gs[0].Metrics, want)
	}
}

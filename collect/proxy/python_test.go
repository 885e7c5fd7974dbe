package proxy_test

import (
	"context"
	"maps"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect/proxy"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/trajectory"
)

// TestPythonHelperSetsGroupFields: python/hone_proxy.py's close_group
// sends the group's metadata and metrics, which the proxy writes as the
// group's own fields, a None metric left out; a metadata value that is not a scalar is refused in
// Python, before any request.
func TestPythonHelperSetsGroupFields(t *testing.T) {
	py, helper := pythonAndHelper(t)
	up, _, _ := upstream(t)
	out := t.TempDir()
	p, err := proxy.New(proxy.Options{Upstream: up.URL + "/v1", OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	runAgent(t, srv.URL+"/v1", "a", "g")
	script := `import sys
sys.path.insert(0, sys.argv[1])
import hone_proxy
t = hone_proxy.Trajectory(group="g", id="a", base_url=sys.argv[2] + "/v1")
t.reward(1, metrics={"turns": 2, "overlap": None})
try:
    t.close_group(metadata={"bad": {"deep": 1}})
except ValueError as e:
    print("refused:", e)
t.close_group(metadata={"scenario": "s1", "level": 3, "hard": True}, metrics={"difficulty": 2.5, "spread": None})
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
	// A None metric is sent as null, which the proxy leaves out of the
	// row as the stdio environment does; the helper refused it.
	if m := gs[0].Trajectories[0].Metrics; !maps.Equal(m, map[string]float64{"turns": 2}) {
		t.Errorf("trajectory metrics %v, want turns 2 alone", m)
	}
	if want := map[string]string{"scenario": "s1", "level": "3", "hard": "true"}; !maps.Equal(gs[0].Metadata, want) || !maps.Equal(gs[0].Metrics, map[string]float64{"difficulty": 2.5}) {
		t.Errorf("group fields %v %v, want %v and difficulty 2.5", gs[0].Metadata, gs[0].Metrics, want)
	}
}

// TestPythonHelperSignaturesAsDocumented: every call docs/proxy.md's
// helper table writes out with its parameters has those parameters, in
// that order, in python/hone_proxy.py, so that a call written from the page
// (positional arguments included) means what the page says.
func TestPythonHelperSignaturesAsDocumented(t *testing.T) {
	py, helper := pythonAndHelper(t)
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "proxy.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "## The Python helper")
	if !ok {
		t.Fatal("docs/proxy.md has no section \"The Python helper\"")
	}
	call := regexp.MustCompile("(t|hone_proxy)\\.([a-z_A-Z]+)\\(([^)`…]*)\\)")
	var names, want []string
	for _, m := range call.FindAllStringSubmatch(section, -1) {
		names = append(names, m[1]+"."+m[2])
		want = append(want, "("+m[3]+")")
	}
	if len(names) < 4 {
		t.Fatalf("found %d calls with parameters in the helper table: %v", len(names), names)
	}
	script := `import sys, inspect
sys.path.insert(0, sys.argv[1])
import hone_proxy
t = hone_proxy.Trajectory(group="g", id="a", base_url="http://127.0.0.1:1/v1")
for name in sys.argv[2:]:
    print(inspect.signature(eval(name)))
`
	out, err := exec.Command(py, append([]string{"-c", script, helper}, names...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(got) != len(names) {
		t.Fatalf("python printed %d signatures for %d calls:\n%s", len(got), len(names), out)
	}
	for i, name := range names {
		if got[i] != want[i] {
			t.Errorf("docs/proxy.md: %s%s; python/hone_proxy.py has %s%s", name, want[i], name, got[i])
		}
	}
}

// TestPythonHelperSetsTrajectoryMetadata: python/hone_proxy.py's reward
// and areward send the trajectory's own metadata (ART's
// Trajectory(metadata=…)), which the proxy writes to the row's metadata
// column; they took no metadata, so a ported agent's call raised
// TypeError. A value that is not a scalar is refused in Python, before
// any request, leaving the trajectory open.
func TestPythonHelperSetsTrajectoryMetadata(t *testing.T) {
	py, helper := pythonAndHelper(t)
	up, _, _ := upstream(t)
	out := t.TempDir()
	base := proxyTo(t, up.URL, out)
	runAgent(t, base+"/v1", "a", "g")
	runAgent(t, base+"/v1", "b", "g")
	script := `import asyncio, sys
sys.path.insert(0, sys.argv[1])
import hone_proxy
a = hone_proxy.Trajectory(group="g", id="a", base_url=sys.argv[2] + "/v1")
b = hone_proxy.Trajectory(group="g", id="b", base_url=sys.argv[2] + "/v1")
try:
    a.reward(1, metadata={"bad": [1]})
except ValueError as e:
    print("refused:", e)
a.reward(1, metadata={"judge": "exact", "level": 3, "solved": True, "note": None})
asyncio.run(b.areward(0, {"turns": 1}, None, {"judge": "fuzzy"}))
a.close_group()
`
	got, err := exec.Command(py, "-c", script, helper, base).CombinedOutput()
	if err != nil || !strings.Contains(string(got), "refused: trajectory metadata 'bad'") {
		t.Fatalf("python: %v\n%s", err, got)
	}
	gs := readOut(t, out)
	if len(gs) != 1 || len(gs[0].Trajectories) != 2 {
		t.Fatalf("groups %+v; want g of two trajectories", gs)
	}
	want := map[string]map[string]string{"a": {"judge": "exact", "level": "3", "solved": "true"}, "b": {"judge": "fuzzy"}}
	for _, tr := range gs[0].Trajectories {
		if !maps.Equal(tr.Metadata, want[tr.ID]) {
			t.Errorf("%s: metadata %v; want %v", tr.ID, tr.Metadata, want[tr.ID])
		}
	}
}

// TestPythonHelperNumbersAsTheProxyReadsThem: python/hone_proxy.py read
// a reward or metric with float(), so the string "0.5" went out as 0.5
// (the proxy refuses a string reward or metric), True went out as a
// reward of 1.0 (the proxy refuses a boolean reward) and 10**400 raised
// OverflowError. Each is now a ValueError naming the field, before
// anything is sent, leaving the trajectory open; a boolean metric (1 or
// 0 at the proxy) and a decimal reward are still sent.
func TestPythonHelperNumbersAsTheProxyReadsThem(t *testing.T) {
	py, helper := pythonAndHelper(t)
	up, _, _ := upstream(t)
	out := t.TempDir()
	base := proxyTo(t, up.URL, out)
	runAgent(t, base+"/v1", "a", "g")
	script := `import decimal, sys
sys.path.insert(0, sys.argv[1])
import hone_proxy
a = hone_proxy.Trajectory(group="g", id="a", base_url=sys.argv[2] + "/v1")
for reward, metrics in [("0.5", None), (True, None), (10**400, None), (1, {"turns": "2"}), (1, {"solved": b"1"})]:
    try:
        a.reward(reward, metrics)
        print("sent:", repr(reward), metrics)
    except ValueError as e:
        print("refused:", e)
a.reward(decimal.Decimal("0.5"), {"solved": True, "turns": 2})
a.close_group()
`
	got, err := exec.Command(py, "-c", script, helper, base).CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, got)
	}
	for _, want := range []string{
		`refused: reward is '0.5': want a number`,
		`refused: reward is True: want a number`,
		`refused: reward is 1000000`,
		`refused: metric turns is '2': want a number`,
		`refused: metric solved is b'1': want a number`,
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("python printed:\n%s\nwant a line %q", got, want)
		}
	}
	gs := readOut(t, out)
	if len(gs) != 1 || len(gs[0].Trajectories) != 1 {
		t.Fatalf("groups %+v; want g of one trajectory", gs)
	}
	tr := gs[0].Trajectories[0]
	if tr.Reward == nil || *tr.Reward != 0.5 || !maps.Equal(tr.Metrics, map[string]float64{"solved": 1, "turns": 2}) {
		t.Errorf("recorded reward %v, metrics %v; want 0.5, solved 1 and turns 2", tr.Reward, tr.Metrics)
	}
}

// TestPythonHelperNaNMetadataNamed: a NaN or infinite float in the
// metadata of python/hone_proxy.py's reward or close_group reached
// json.dumps(allow_nan=False), whose "Out of range float values are not
// JSON compliant" named no key. It is now a ValueError naming whose
// metadata and the key, as a bad reward's names the reward, before any
// request, leaving the trajectory and its group open.
func TestPythonHelperNaNMetadataNamed(t *testing.T) {
	py, helper := pythonAndHelper(t)
	up, _, _ := upstream(t)
	out := t.TempDir()
	base := proxyTo(t, up.URL, out)
	runAgent(t, base+"/v1", "a", "g")
	script := `import sys
sys.path.insert(0, sys.argv[1])
import hone_proxy
a = hone_proxy.Trajectory(group="g", id="a", base_url=sys.argv[2] + "/v1")
for call in [lambda: a.reward(1, metadata={"judge": "exact", "score": float("nan")}),
             lambda: a.close_group(metadata={"spread": float("-inf")})]:
    try:
        call()
        print("sent")
    except ValueError as e:
        print("refused:", e)
a.reward(1, metadata={"score": 0.5})
a.close_group()
`
	got, err := exec.Command(py, "-c", script, helper, base).CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, got)
	}
	for _, want := range []string{
		`refused: trajectory metadata 'score' is nan: want a finite number`,
		`refused: group metadata 'spread' is -inf: want a finite number`,
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("python printed:\n%s\nwant a line %q", got, want)
		}
	}
	gs := readOut(t, out)
	if len(gs) != 1 || len(gs[0].Trajectories) != 1 || gs[0].Trajectories[0].Metadata["score"] != "0.5" {
		t.Fatalf("groups %+v; want g of one trajectory with score 0.5", gs)
	}
}

// pythonAndHelper is python3's path and the folder of python/hone_proxy.py,
// which each helper test puts on sys.path.
func pythonAndHelper(t *testing.T) (py, helper string) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		needTool(t, "python3 is not on PATH")
	}
	helper, err = filepath.Abs(filepath.Join("..", "..", "python"))
	if err != nil {
		t.Fatal(err)
	}
	return py, helper
}

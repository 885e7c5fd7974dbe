package main

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// TestFormulaNamesWithPunctuation scores rows whose metric and component
// names hold a dot, a dash or a slash (names --scorer NAME=... accepts,
// and metrics as ART logs them). A bare tool.calls reads field calls of
// tool, num-turns is num minus turns: the error said there was no "tool"
// and told the user to write metrics["tool"] ?? 0, which reads nothing
// either. It now names the row's metric or component and how to read it.
func TestFormulaNamesWithPunctuation(t *testing.T) {
	dir := t.TempDir()
	named := oneGroupEdited(t, dir, "named.parquet", func(gs []trajectory.Group) {
		for i := range gs[0].Trajectories {
			tr := &gs[0].Trajectories[i]
			tr.Metrics["tool.calls"], tr.Metrics["num-turns"], tr.Metrics["judge/score"] = 2, 3, 0.5
		}
	})
	out := filepath.Join(dir, "out.parquet")
	for _, c := range []struct {
		scorers []string
		want    string
	}{
		{[]string{"formula:1 - 0.1*tool.calls"}, `metrics["tool.calls"]`},
		{[]string{"formula:1 - 0.1*num-turns"}, `metrics["num-turns"]`},
		{[]string{"formula:judge/score"}, `metrics["judge/score"]`},
		{[]string{"my-win=formula:win", "formula:my-win * 2"}, `components["my-win"]`},
	} {
		var args []string
		for _, s := range c.scorers {
			args = append(args, "--scorer", s)
		}
		r := runBin(t, nil, nil, append(append([]string{"-o", out}, args...), named)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%q: exit %d, want 2 with the error naming %s:\n%s", c.scorers, r.code, c.want, r.stderr)
		}
	}
	// Read as the error says, each is found.
	r := runBin(t, nil, nil, "-o", out, "--scorer", "my-win=formula:win", "--scorer",
		`formula:metrics["tool.calls"] + metrics["num-turns"] + metrics["judge/score"] + components["my-win"]`, named)
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr)
	}
}

// TestBadInputNamesOneRow: a group of one that fails a formula was named
// "rows 2-2"; it is "row 2" now, as the repo's other counts of one read.
func TestBadInputNamesOneRow(t *testing.T) {
	dir := t.TempDir()
	in := scenario(t, dir, "in.parquet", 0, 1, 2)
	solo := scenario(t, dir, "solo.parquet", 5, 1, 1)
	out := filepath.Join(dir, "out.parquet")
	r := runBin(t, nil, nil, "-o", out, "--concurrency", "1", "--scorer", "formula:win / illegal", solo, in)
	if r.code != 2 || !strings.Contains(r.stderr, `solo.parquet: row 0: scorer formula: group "g5"`) {
		t.Fatalf("exit %d, want 2 naming solo.parquet's one row as \"row 0\":\n%s", r.code, r.stderr)
	}
}

// TestFormulaRewardNullHidesNoMetric: a bare reward is the reward so far,
// which hides a metric named reward; on a row whose reward is null it read
// that metric instead (7 * 2 = 14 beside the other row's 1 * 2), where
// the formula package says it is absent. Such a row now fails, saying the
// reward is null and how to read the metric.
func TestFormulaRewardNullHidesNoMetric(t *testing.T) {
	dir := t.TempDir()
	p := oneGroupEdited(t, dir, "rw.parquet", func(gs []trajectory.Group) {
		for i := range gs[0].Trajectories {
			gs[0].Trajectories[i].Metrics["reward"] = 7
		}
		gs[0].Trajectories[1].Reward = nil
	})
	r := runBin(t, nil, nil, "-o", filepath.Join(dir, "out.parquet"), "--scorer", "formula:reward * 2", p)
	if r.code != 2 || !strings.Contains(r.stderr, `trajectory "g0-1"`) || !strings.Contains(r.stderr, "reward is null") ||
		!strings.Contains(r.stderr, `metrics["reward"]`) {
		t.Fatalf("exit %d, want 2 saying g0-1's reward is null and naming metrics[\"reward\"]:\n%s", r.code, r.stderr)
	}
}

// TestFormulaNamesNaNReward: a formula that reads a NaN reward gives NaN;
// the error named the row's NaN or infinite values a formula read, but
// not the reward, so it read as the formula's own fault (a division by
// zero). It names the reward now.
func TestFormulaNamesNaNReward(t *testing.T) {
	dir := t.TempDir()
	p := oneGroupEdited(t, dir, "nan.parquet", func(gs []trajectory.Group) {
		gs[0].Trajectories[1].Reward = trajectory.Float64(math.NaN())
	})
	r := runBin(t, nil, nil, "-o", filepath.Join(dir, "out.parquet"), "--scorer", "formula:reward + win", p)
	if r.code != 2 || !strings.Contains(r.stderr, `gave NaN, not a finite number; the row's reward is NaN`) {
		t.Fatalf("exit %d, want 2 naming the NaN reward:\n%s", r.code, r.stderr)
	}
}

// TestFormulaRewardNullNamesComponent: on a row whose reward is null
// and which holds a component named reward (an import's), a bare reward
// failed pointing at metrics["reward"], which the row lacks, so the
// formula written as told failed again; it names components["reward"].
func TestFormulaRewardNullNamesComponent(t *testing.T) {
	dir := t.TempDir()
	p := oneGroupEdited(t, dir, "rc.parquet", func(gs []trajectory.Group) {
		for i := range gs[0].Trajectories {
			tr := &gs[0].Trajectories[i]
			tr.Reward = nil
			tr.RewardComponents = append(tr.RewardComponents, trajectory.RewardComponent{Name: "reward", Value: 3})
		}
	})
	r := runBin(t, nil, nil, "-o", filepath.Join(dir, "out.parquet"), "--scorer", "formula:reward * 2", p)
	if r.code != 2 || !strings.Contains(r.stderr, "reward is null") || !strings.Contains(r.stderr, `components["reward"]`) {
		t.Fatalf("exit %d, want 2 saying the reward is null and naming components[\"reward\"]:\n%s", r.code, r.stderr)
	}
}

// TestFormulaEnvNeverReadsMetric: a bare env is the env component, which
// a row with a null reward lacks; on such a row it read a metric named
// env in its place (7*2 beside the next row's 1*2), as a bare reward did
// before. A name the chain writes as a component (env, each scorer's) is
// now never a metric: the row fails, naming metrics["env"].
func TestFormulaEnvNeverReadsMetric(t *testing.T) {
	dir := t.TempDir()
	p := oneGroupEdited(t, dir, "env.parquet", func(gs []trajectory.Group) {
		for i := range gs[0].Trajectories {
			gs[0].Trajectories[i].Metrics["env"] = 7
		}
		gs[0].Trajectories[1].Reward = nil
	})
	r := runBin(t, nil, nil, "-o", filepath.Join(dir, "out.parquet"), "--scorer", "final=formula:env * 2", p)
	if r.code != 2 || !strings.Contains(r.stderr, `no component named "env"`) || !strings.Contains(r.stderr, `metrics["env"]`) {
		t.Fatalf("exit %d, want 2 saying the row has no env component and naming metrics[\"env\"]:\n%s", r.code, r.stderr)
	}
}

// TestFormulaNilTestThenRead: a nil test guards the read it leads to,
// as expr evaluates it: reward == nil ? 5 : reward reads reward only where
// it is there, as do reward != nil && reward > 0 and env != nil ? env : 0.
// A bare name guarded by == nil but read again in the branch the test
// chose failed every null-reward row with "the row's reward is null",
// which the test was written to handle.
func TestFormulaNilTestThenRead(t *testing.T) {
	dir := t.TempDir()
	p := oneGroupEdited(t, dir, "null.parquet", func(gs []trajectory.Group) {
		gs[0].Trajectories[1].Reward = nil
	})
	for _, c := range []struct {
		src        string
		win, other float64
	}{
		{"reward == nil ? 5 : reward", 1, 5},
		{"reward != nil ? reward * 2 : 3", 2, 3},
		{"reward != nil && reward > 0", 1, 0},
		{"reward == nil || reward > 0", 1, 1},
		{"(env != nil ? env : 0) + 1", 2, 1},
	} {
		out := filepath.Join(dir, "out.parquet")
		r := runBin(t, nil, nil, "-o", out, "--scorer", "final=formula:"+c.src, p)
		if r.code != 0 {
			t.Errorf("%s: exit %d, want 0:\n%s", c.src, r.code, r.stderr)
			continue
		}
		got := readBack(t, out)[0].Trajectories
		for i, want := range []float64{c.win, c.other} {
			if v, ok := component(got[i], "final"); !ok || v != want {
				t.Errorf("%s: row %d final = %v (%v), want %v", c.src, i, v, ok, want)
			}
		}
	}
	// A read the test does not lead to is still checked.
	r := runBin(t, nil, nil, "-o", filepath.Join(dir, "bad.parquet"), "--scorer", "final=formula:reward == nil ? reward : 0", p)
	if r.code != 2 || !strings.Contains(r.stderr, "the row's reward is null") {
		t.Fatalf("reward == nil ? reward : 0: exit %d, want 2 saying the reward is null:\n%s", r.code, r.stderr)
	}
}

// TestFormulaInComponentsThenRead: "env" in components ? env : 0 reads the
// bare env only where the row has that component, which the test shows:
// it failed every row without env ("no component named env"), the test
// it was written with not counted, as a nil test was not.
func TestFormulaInComponentsThenRead(t *testing.T) {
	dir := t.TempDir()
	p := oneGroupEdited(t, dir, "null.parquet", func(gs []trajectory.Group) {
		gs[0].Trajectories[1].Reward = nil
	})
	for _, c := range []struct {
		src        string
		win, other float64
	}{
		{`"env" in components ? env + 1 : 0`, 2, 0},
		{`"env" not in components ? 3 : env`, 1, 3},
		{`"env" in components && env > 0`, 1, 0},
	} {
		out := filepath.Join(dir, "out.parquet")
		r := runBin(t, nil, nil, "-o", out, "--scorer", "final=formula:"+c.src, p)
		if r.code != 0 {
			t.Errorf("%s: exit %d, want 0:\n%s", c.src, r.code, r.stderr)
			continue
		}
		got := readBack(t, out)[0].Trajectories
		for i, want := range []float64{c.win, c.other} {
			if v, ok := component(got[i], "final"); !ok || v != want {
				t.Errorf("%s: row %d final = %v (%v), want %v", c.src, i, v, ok, want)
			}
		}
	}
	// "env" in metrics shows a metric, not the env component: the bare
	// env is still checked on every row.
	r := runBin(t, nil, nil, "-o", filepath.Join(dir, "bad.parquet"), "--scorer", `final=formula:"env" in metrics ? env : 0`, p)
	if r.code != 2 || !strings.Contains(r.stderr, `no component named "env"`) {
		t.Fatalf(`"env" in metrics ? env : 0: exit %d, want 2 saying the row has no env component:%s`, r.code, r.stderr)
	}
}

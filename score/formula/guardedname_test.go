package formula_test

import (
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/score/formula"
)

// TestGuardedBareName: ?? is there for a name a row may lack, but a bare
// name was checked before the expression ran, so (reward ?? 0) + 1 failed
// on a row whose reward is null ("the row's reward is null"), and
// (env ?? 0) on a row without env. A bare name the expression guards
// (??, == nil) is nil when missing now; one read unguarded anywhere in
// the expression still fails with its own message.
func TestGuardedBareName(t *testing.T) {
	row := &trajectory.Trajectory{ID: "t1", Metrics: map[string]float64{"x": 2}}
	for _, c := range []struct {
		src  string
		want float64
	}{
		{"(reward ?? 0) + 1", 1},
		{"(env ?? 0) + x", 2},
		{`(reward ?? 0) + (metrics["y"] ?? 0) + 1`, 1},
		{"reward == nil ? 5 : 1", 5},
		{"(reward ?? env ?? 3) * x", 6},
	} {
		f, err := formula.New("f", c.src)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := f.Eval(row); err != nil || got != c.want {
			t.Errorf("%s = %v, %v; want %v", c.src, got, err, c.want)
		}
	}
	for src, want := range map[string]string{
		"(reward ?? 0) + reward": "the row's reward is null",
		"(env ?? 0) + env":       `no metric or component named "env"`,
	} {
		f, err := formula.New("f", src)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Eval(row); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", src, err, want)
		}
	}
}

// TestMetricsTestGuardsNoChainName: a metrics test shows the metric
// there, which a bare name the chain writes (ComponentNames) does not
// read, nor a bare reward: behind "env" in metrics or "reward" in
// metrics such a name still fails a row without it, by its own message.
func TestMetricsTestGuardsNoChainName(t *testing.T) {
	row := &trajectory.Trajectory{ID: "t1", Metrics: map[string]float64{"env": 2, "reward": 3}}
	for src, want := range map[string]string{
		`"env" in metrics ? env : 0`:       `no component named "env"`,
		`"reward" in metrics ? reward : 0`: "the row's reward is null",
		// keys(metrics) is the same test, with the same exceptions.
		`"env" in keys(metrics) ? env : 0`:       `no component named "env"`,
		`"reward" in keys(metrics) ? reward : 0`: "the row's reward is null",
	} {
		f, err := formula.New("f", src)
		if err != nil {
			t.Fatal(err)
		}
		f.ComponentNames("env")
		if _, err := f.Eval(row); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", src, err, want)
		}
	}
	f, err := formula.New("f", `"x" in metrics ? x : 1`)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := f.Eval(&trajectory.Trajectory{ID: "t2"}); err != nil || got != 1 {
		t.Errorf(`"x" in metrics ? x : 1 on a row without x = %v, %v; want 1`, got, err)
	}
}

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

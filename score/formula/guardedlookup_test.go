package formula_test

import (
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/score/formula"
)

// TestGuardedLookupOnlyWhereGuarded: a lookup guarded in one place
// counted as guarded everywhere, so (metrics["y"] ?? 0) + metrics["y"]
// on a row without y failed inside expr with an arithmetic error on nil,
// not "no metric named y". Each read is guarded or not on its own now;
// one that only a test showing the key there leads to still reads it.
func TestGuardedLookupOnlyWhereGuarded(t *testing.T) {
	row := &trajectory.Trajectory{ID: "t1", Metrics: map[string]float64{"x": 2}}
	for src, want := range map[string]string{
		`(metrics["y"] ?? 0) + metrics["y"]`:         `no metric named "y"`,
		`(metrics?.y ?? 0) + metrics.y`:              `no metric named "y"`,
		`(components["c"] ?? 1) * components["c"]`:   `no component named "c"`,
		`metrics["y"] == nil ? metrics["y"] + 1 : 0`: `no metric named "y"`,
		`("y" in metrics ? 1 : 0) + metrics["y"]`:    `no metric named "y"`,
	} {
		f, err := formula.New("f", src)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Eval(row); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", src, err, want)
		}
	}
	for src, want := range map[string]float64{
		`metrics["y"] == nil ? 5 : metrics["y"]`:    5,
		`metrics["x"] != nil ? metrics["x"] : 5`:    2,
		`"y" in metrics ? metrics["y"] : 7`:         7,
		`"y" in metrics && metrics["y"] > 0`:        0,
		`(metrics["y"] ?? metrics["z"] ?? 3) * x`:   6,
		`(metrics["y"] ?? 0) + (metrics["y"] ?? 1)`: 1,
		`metrics?.y ?? metrics["x"]`:                2,
		`(true ? metrics["y"] : metrics["z"]) ?? 4`: 4,
	} {
		f, err := formula.New("f", src)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := f.Eval(row); err != nil || got != want {
			t.Errorf("%s = %v, %v; want %v", src, got, err, want)
		}
	}
}

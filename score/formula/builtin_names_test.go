package formula_test

import (
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/score/formula"
)

// Metrics and components are read by their own names, also when the name
// is that of one of expr's built-in functions (count, duration, sum, len,
// ...): used as a value, it is the metric; called, it is still the
// function.
func TestNamesOfBuiltins(t *testing.T) {
	tr := &trajectory.Trajectory{ID: "t1", GroupID: "g1",
		Metrics:          map[string]float64{"win": 1, "count": 4, "duration": 12.5, "sum": 2},
		RewardComponents: []trajectory.RewardComponent{{Name: "len", Value: 3}},
	}
	cases := []struct {
		expr string
		want float64
	}{
		{"count * 2", 8},
		{"win - 0.01*duration", 0.875},
		{"len + sum", 5},
		{"max(count, duration)", 12.5},
		{"count + len([1, 2])", 6},
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			f, err := formula.New("f", c.expr)
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.Eval(tr)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("%s = %v, want %v", c.expr, got, c.want)
			}
		})
	}
}

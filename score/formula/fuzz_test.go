package formula_test

import (
	"math"
	"testing"

	"github.com/hone-rl/hone/score/formula"
)

// FuzzFormula: no expression makes New or Eval panic, and Eval's results
// are finite.
func FuzzFormula(f *testing.F) {
	for _, s := range []string{"win - 0.1*illegal", "max(ruler, 1)", `metrics["judge/score"]`, "reward ?? 0",
		"let x = 1; x / 0", "1..3", "[1,2][5]", "win ** 1000", `"a" + 1`, "nil", "foo()", "illegal % 0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		s, err := formula.New("f", src)
		if err != nil {
			return
		}
		v, err := s.Eval(traj())
		if err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Fatalf("%q gave %v without an error", src, v)
		}
	})
}

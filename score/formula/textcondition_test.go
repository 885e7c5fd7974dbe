package formula_test

import (
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/score/formula"
)

// TestTextAsConditionSaysText: metadata are text, and one used as a
// condition (metadata.solved ? 1 : 0, a missing key being nil) was called
// a number, with the advice to write metadata.solved != 0, which is true
// for any text and scores every row 1. The error now says text (or a
// missing key) stands where a condition is wanted and to compare it with
// a text; a number keeps its own advice.
func TestTextAsConditionSaysText(t *testing.T) {
	tr := &trajectory.Trajectory{ID: "t1", GroupID: "g1",
		Metrics:  map[string]float64{"win": 1},
		Metadata: map[string]string{"solved": "true"},
	}
	for _, c := range []struct{ src, want, not string }{
		{`metadata["solved"] ? 1 : 0`, `text where a condition`, "a number"},
		{`not metadata.solved ? 1 : 0`, `== "true"`, "!= 0"},
		{`metadata.missing ? 1 : 0`, "a key the row lacks", "a number"},
		{`win ? 1 : 0`, "a number where a condition", "text"},
	} {
		f, err := formula.New("f", c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		_, err = f.Eval(tr)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), c.not) || strings.Contains(err.Error(), "interface") {
			t.Errorf("%s: %v; want an error saying %q, not %q", c.src, err, c.want, c.not)
		}
	}
}

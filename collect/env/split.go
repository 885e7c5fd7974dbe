package env

import (
	"context"
	"fmt"
	"strings"

	"github.com/hone-rl/hone/format/trajectory"
)

// SplitSource is an Env whose scenarios carry their own split, as data (a
// task file, a program that labels them), unlike the built-in games,
// whose scenarios are a function of the seed and take the run's --split
// as their label. Asked for one split it makes scenarios of that split
// alone: relabelling the others would train on a held-out task, or
// measure a trained one as held out.
type SplitSource interface {
	// ScenariosOf is Scenarios of split split (train, val or test).
	ScenariosOf(ctx context.Context, seed int64, n int, split string) ([]Scenario, error)
}

// OfSplit keeps the fixed scenarios (a file's) of split, in order, each
// labelled split. One without a split of its own is train, as hone-train
// reads it (it trains on such rows): kept for train, never for val or
// test, where it would be a trained task measured as held out.
func OfSplit(scs []Scenario, split string) []Scenario {
	var out []Scenario
	for _, sc := range scs {
		if sc.Split == split || (sc.Split == "" && split == trajectory.SplitTrain) {
			sc.Split = split
			out = append(out, sc)
		}
	}
	return out
}

// Splits says how many scenarios each split holds, for an error that
// names what a set has when the split asked is not among them: "3
// without a split (train), 1 val".
func Splits(scs []Scenario) string {
	counts := map[string]int{}
	for _, sc := range scs {
		counts[sc.Split]++
	}
	var parts []string
	if n := counts[""]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d without a split (train)", n))
	}
	for _, sp := range []string{trajectory.SplitTrain, trajectory.SplitVal, trajectory.SplitTest} {
		if n := counts[sp]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, sp))
		}
	}
	return strings.Join(parts, ", ")
}

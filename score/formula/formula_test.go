package formula_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/score/formula"
)

func traj() *trajectory.Trajectory {
	return &trajectory.Trajectory{ID: "t1", GroupID: "g1",
		Metrics:          map[string]float64{"win": 1, "illegal": 3, "judge/score": 0.5},
		RewardComponents: []trajectory.RewardComponent{{Name: "ruler", Value: 0.8}, {Name: "win", Value: 0}},
		Reward:           trajectory.Float64(0.8),
		Metadata:         map[string]string{"difficulty": "hard"},
	}
}

func TestEval(t *testing.T) {
	cases := []struct {
		expr string
		want float64
	}{
		{"metrics.win - 0.1*illegal", 0.7},
		{"win", 0}, // a component shadows the metric of the same name
		{`metrics["judge/score"] + components["ruler"]`, 1.3},
		{"reward * 2", 1.6},
		{"max(ruler, 0.9)", 0.9},
		{"illegal > 2", 1},
		{"illegal > 5", 0},
		{`metadata["difficulty"] == "hard" ? 2 : 1`, 2},
		{"let x = ruler; x * x", 0.64},
		{"3", 3},
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			f, err := formula.New("f", c.expr)
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.Eval(traj())
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-c.want) > 1e-12 {
				t.Fatalf("%s = %v, want %v", c.expr, got, c.want)
			}
		})
	}
}

func TestBadExpression(t *testing.T) {
	for _, src := range []string{"win - ", "win +* 2", "(win", "foo("} {
		_, err := formula.New("f", src)
		if err == nil || !strings.Contains(err.Error(), `formula "`+src+`"`) {
			t.Errorf("New(%q): err = %v, want an error naming the expression", src, err)
		}
	}
}

func TestEvalErrors(t *testing.T) {
	cases := map[string]string{
		"wins - 1":               `no metric or component named "wins"`,
		`"text"`:                 "not a number",
		"0.0/0":                  "not a finite number",
		"1/0":                    "not a finite number",
		`metadata["difficulty"]`: "not a number",
		"[win, 2]":               "gave a list [0 2], not a number",
		"{'a': 1}":               "gave a map, not a number",
	}
	for src, want := range cases {
		f, err := formula.New("f", src)
		if err != nil {
			t.Fatalf("New(%q): %v", src, err)
		}
		_, err = f.Eval(traj())
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), fmt.Sprintf("formula %q", src)) || strings.Contains(err.Error(), "interface") {
			t.Errorf("Eval(%q): err = %v, want %q and the expression", src, err, want)
		}
	}
	// reward is absent while null.
	f, _ := formula.New("f", "reward + 1")
	tr := traj()
	tr.Reward = nil
	if _, err := f.Eval(tr); err == nil || !strings.Contains(err.Error(), `"reward"`) {
		t.Errorf("null reward: err = %v", err)
	}
}

func TestScoreGroup(t *testing.T) {
	f, err := formula.New("shaped", "win - 0.1*illegal")
	if err != nil {
		t.Fatal(err)
	}
	g := &trajectory.Group{ID: "g1", Trajectories: []trajectory.Trajectory{
		{ID: "a", Metrics: map[string]float64{"win": 1, "illegal": 0}},
		{ID: "b", Metrics: map[string]float64{"win": 0, "illegal": 2}},
	}}
	comps, err := f.ScoreGroup(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	if comps[0] != (trajectory.RewardComponent{Name: "shaped", Value: 1, Explanation: "win - 0.1*illegal"}) || math.Abs(comps[1].Value+0.2) > 1e-12 {
		t.Fatalf("comps = %+v", comps)
	}
	g.Trajectories[1].Metrics = nil
	_, err = f.ScoreGroup(context.Background(), g)
	if err == nil || !strings.Contains(err.Error(), `group "g1", trajectory "b"`) {
		t.Fatalf("err = %v, want the group and trajectory named", err)
	}
}

// A group metric that is NaN is named as the group's, not the row's: the
// group's metrics are the group's own, which every row of it repeats.
func TestNotFiniteNamesTheGroupMetric(t *testing.T) {
	f, err := formula.New("f", `win + group_metrics["spread"]`)
	if err != nil {
		t.Fatal(err)
	}
	g := &trajectory.Group{ID: "g1", Metrics: map[string]float64{"spread": math.NaN()},
		Trajectories: []trajectory.Trajectory{{ID: "a", Metrics: map[string]float64{"win": 1}}}}
	_, err = f.ScoreGroup(context.Background(), g)
	if err == nil || !strings.Contains(err.Error(), `the group's metric "spread" is NaN`) || strings.Contains(err.Error(), "the row's") {
		t.Errorf("err = %v, want it to say the group's metric \"spread\" is NaN", err)
	}
}

// metrics["name"] and components["name"] name a metric or component as a
// bare name does, so a row that lacks it is an error too (the lookup gave
// nil, and nil == 1 is false: a row without the metric scored 0 for
// metrics["judge/score"] == 1 ? 1 : 0, where `solved == 1 ? 1 : 0` is an
// error). A formula that says what to do when it is missing (??, ?.,
// == nil, "name" in metrics) is evaluated as written.
func TestMissingLookupIsAnError(t *testing.T) {
	tr := traj() // metrics win, illegal, judge/score; components ruler, win
	for src, want := range map[string]string{
		`metrics["solved"] == 1 ? 1 : 0`: `no metric named "solved"`,
		`metrics.solved != 1`:            `no metric named "solved"`,
		`components["judge"] >= 0.5`:     `no component named "judge" (has metrics illegal, judge/score, win; components ruler, win; reward; metadata difficulty); where a row may lack it, write components["judge"] ?? 0`,
		`metrics.solved in [1, 2]`:       `no metric named "solved"`,
		`components?.ruler + metrics.x`:  `no metric named "x"`,
	} {
		f, err := formula.New("f", src)
		if err != nil {
			t.Fatalf("New(%q): %v", src, err)
		}
		v, err := f.Eval(tr)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), fmt.Sprintf("formula %q", src)) {
			t.Errorf("Eval(%q) = %v, %v; want an error saying %s", src, v, err, want)
		}
	}
	for src, want := range map[string]float64{
		`metrics["solved"] ?? 0.5`:                       0.5,
		`metrics?.solved ?? 0.25`:                        0.25,
		`metrics.solved == nil ? 2 : metrics.solved`:     2,
		`"solved" in metrics ? metrics.solved : 3`:       3,
		`"solved" in keys(metrics) ? metrics.solved : 3`: 3,
		`components["ruler"] + metrics["judge/score"]`:   1.3,
		`let metrics = {"solved": 4}; metrics.solved`:    4,
		`metadata["missing"] == nil`:                     1,
	} {
		f, err := formula.New("f", src)
		if err != nil {
			t.Fatalf("New(%q): %v", src, err)
		}
		if v, err := f.Eval(tr); err != nil || math.Abs(v-want) > 1e-12 {
			t.Errorf("Eval(%q) = %v, %v; want %v", src, v, err, want)
		}
	}
}

// A lookup is an error only when the formula reads it: a branch not taken
// (a formula for a folder of several environments' files, each reporting
// its own metric) or the right of a ?? whose left is there reads nothing,
// as before lookups had to exist; and a chain of fallbacks ending in a
// default guards each name in it.
func TestConditionalLookup(t *testing.T) {
	tr := traj() // metrics win, illegal, judge/score; components ruler, win
	for src, want := range map[string]float64{
		`metrics.win == 1 ? metrics.win : metrics.solved`:     1,
		`metrics.win > 1 ? metrics.solved : 5`:                5,
		`metrics.win ?? metrics.solved`:                       1,
		`metrics.win == 1 || metrics.solved == 1`:             1,
		`metrics.solved ?? metrics.other ?? 0.5`:              0.5,
		`metrics.solved ?? metrics.win ?? 0.5`:                1,
		`(metrics.win > 1 ? metrics.solved : metrics.x) ?? 6`: 6,
	} {
		f, err := formula.New("f", src)
		if err != nil {
			t.Fatalf("New(%q): %v", src, err)
		}
		if v, err := f.Eval(tr); err != nil || math.Abs(v-want) > 1e-12 {
			t.Errorf("Eval(%q) = %v, %v; want %v", src, v, err, want)
		}
	}
	for src, want := range map[string]string{
		`metrics.win == 1 ? metrics.solved : 0`: `no metric named "solved" (has metrics illegal, judge/score, win; components ruler, win; reward; metadata difficulty); where a row may lack it, write metrics["solved"] ?? 0`,
		`metrics.x ?? metrics.y`:                `no metric named "y"`,
		`metrics.win == 1 && components.z > 0`:  `no component named "z"`,
	} {
		f, err := formula.New("f", src)
		if err != nil {
			t.Fatalf("New(%q): %v", src, err)
		}
		v, err := f.Eval(tr)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), fmt.Sprintf("formula %q: no ", src)) {
			t.Errorf("Eval(%q) = %v, %v; want an error saying %s", src, v, err, want)
		}
	}
}

// A formula that gives NaN or ±Inf because the row holds one (a metric an
// environment wrote as NaN, a component from a file other tools wrote)
// names that value, so the error says where to look; one that divides by
// zero names no input.
func TestNotFiniteNamesTheInput(t *testing.T) {
	tr := traj()
	tr.Metrics["illegal"] = math.NaN()
	tr.RewardComponents = append(tr.RewardComponents, trajectory.RewardComponent{Name: "bonus", Value: math.Inf(-1)})
	for src, want := range map[string]string{
		"win - 0.1*illegal":  `the row's metric "illegal" is NaN`,
		"ruler + bonus":      `the row's component "bonus" is -Inf`,
		`metrics["illegal"]`: `the row's metric "illegal" is NaN`,
	} {
		f, err := formula.New("f", src)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.Eval(tr)
		if err == nil || !strings.Contains(err.Error(), "not a finite number") || !strings.Contains(err.Error(), want) {
			t.Errorf("Eval(%q): err = %v, want it to say %q", src, err, want)
		}
	}
	f, _ := formula.New("f", "win/0")
	if _, err := f.Eval(traj()); err == nil || strings.Contains(err.Error(), "the row's") {
		t.Errorf("win/0: err = %v, want not finite with no input named", err)
	}
}

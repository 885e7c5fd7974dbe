package trainer

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestCheckBestMetric(t *testing.T) {
	train := append(LoopMetrics(), "reward_mean", "loss")
	for _, tc := range []struct {
		name string
		bad  []string // what the refusal must say; nil: accepted
	}{
		{"", nil},
		{"reward_mean", nil},
		{"grad_norm", nil},
		{"val/reward", nil},
		{"val-greedy/exception_rate", nil},
		{"val/solved", nil}, // an environment metric: CheckEvalMetric's part
		{"val_reward", []string{`"val_reward" is not a metric`, "training metrics: ", "reward_mean", "val/reward, val/reward_std_dev, val/exception_rate, val/episodes, val/<environment metric>"}},
		{"reward-mean", []string{"is not a metric", "reward_mean"}},
		{"Val/reward", []string{"SPLIT/NAME", `split "Val"`}},
		{"val/", []string{"name is missing", "val/reward"}},
	} {
		err := CheckBestMetric(tc.name, train)
		if (err != nil) != (tc.bad != nil) {
			t.Errorf("%q: %v", tc.name, err)
			continue
		}
		for _, want := range tc.bad {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q: %v; want it to say %q", tc.name, err, want)
			}
		}
	}
}

func TestCheckEvalMetric(t *testing.T) {
	train := []string{"reward_mean"}
	env := []string{"moves", "solved"}
	logged := map[int]map[string]float64{2: {"val/reward": 1, "val/won": 1, "test/lost": 0}}
	for _, tc := range []struct {
		name     string
		env      []string
		complete bool
		eval     map[int]map[string]float64
		checked  bool
		bad      []string
	}{
		{"reward_mean", env, true, nil, true, nil},
		{"val/reward", nil, true, nil, true, nil},
		{"val/solved", env, true, nil, true, nil},
		{"val/rewrd", env, true, nil, true, []string{`"rewrd" is neither`, "val/moves, val/solved", "val/reward_std_dev"}},
		{"val/rewrd", nil, true, nil, true, []string{"(none)"}},
		// Inputs that need not come from an environment: unknown until logged.
		{"val/rewrd", nil, false, nil, false, nil},
		// eval.jsonl already shows what the split records.
		{"val/won", nil, false, logged, true, nil},
		{"val/lost", nil, false, logged, true, []string{"eval.jsonl holds for val", "val/reward, val/won"}},
		{"test/lost", nil, false, logged, true, nil},
		{"val-greedy/won", nil, false, logged, false, nil},
	} {
		checked, err := CheckEvalMetric(tc.name, train, tc.env, tc.complete, tc.eval)
		if checked != tc.checked || (err != nil) != (tc.bad != nil) {
			t.Errorf("%q (env %v, complete %v): checked %v, %v", tc.name, tc.env, tc.complete, checked, err)
			continue
		}
		for _, want := range tc.bad {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q: %v; want it to say %q", tc.name, err, want)
			}
		}
	}
}

// Without --best-mode, a metric named as a loss is best at its minimum (as
// Hugging Face's Trainer takes metric_for_best_model "loss"): max kept the
// step of the highest loss. The resolved mode is what the run saves.
func TestBestModeDefault(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--best-metric", "loss"}, "min"},
		{[]string{"--best-metric", "val/policy_loss"}, "min"},
		{[]string{"--best-metric", "reward_mean"}, "max"},
		{[]string{"--best-metric", "val/reward"}, "max"},
		{nil, "max"},
		{[]string{"--best-metric", "loss", "--best-mode", "max"}, "max"},
		{[]string{"--best-metric", "reward_mean", "--best-mode", "min"}, "min"},
	} {
		var o Options
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		o.AddFlags(fs, 1e-5)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		o.Model, o.Out, o.Name = "m", "out", "r"
		if err := o.Validate(); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if o.BestMode != tc.want {
			t.Errorf("%v: best mode %q, want %q", tc.args, o.BestMode, tc.want)
		}
	}
}

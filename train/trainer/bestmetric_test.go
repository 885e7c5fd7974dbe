package trainer

import (
	"strings"
	"testing"
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

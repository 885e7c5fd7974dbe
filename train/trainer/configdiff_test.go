package trainer

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/spf13/pflag"
)

// TestConfigDiffNamesOnlyTheFields: a resumed run that changes options is
// told which ones, with both values as a user types them, and nothing else.
func TestConfigDiffNamesOnlyTheFields(t *testing.T) {
	saved := []byte(`{"model": "m", "lr": 0.00001, "inputs": ["a.parquet"], "steps": 3,
		"loss": {"loss": "art", "beta": 0}, "targets": ["q_proj"], "dtype": "float32"}`)
	for _, tc := range []struct {
		now       string
		mayChange []string
		want      []string
	}{
		{`{"model": "m", "lr": 0.00002, "inputs": ["a.parquet"], "steps": 9, "loss": {"loss": "art", "beta": 0}, "targets": ["q_proj"]}`, nil,
			[]string{`option "lr" differs: run has 1e-5, command gives 2e-5`}},
		{`{"model": "m", "lr": 0.00001, "inputs": ["b.parquet"], "loss": {"loss": "art", "beta": 0.5}, "targets": ["q_proj", "v_proj"]}`, nil,
			[]string{`option "inputs" differs: run has ["a.parquet"], command gives ["b.parquet"]`,
				`option "loss.beta" differs: run has 0, command gives 0.5`,
				`option "targets" differs: run has ["q_proj"], command gives ["q_proj","v_proj"]`}},
		{`{"model": "m", "lr": 0.00001, "inputs": ["b.parquet"], "loss": {"loss": "art", "beta": 0}, "targets": ["q_proj"]}`, []string{"inputs"}, nil},
		{`{"model": "m", "lr": 0.00001, "loss": {"loss": "art", "beta": 0}, "targets": ["q_proj"], "rank": 4, "dtype": "bfloat16"}`, nil,
			[]string{`option "dtype" differs: run has "float32", command gives "bfloat16"`,
				`option "inputs" differs: run has ["a.parquet"], command leaves it unset`,
				`option "rank" differs: run has it unset, command gives 4`}},
	} {
		got := configDiff(saved, []byte(tc.now), tc.mayChange...)
		if !slices.Equal(got, tc.want) {
			t.Errorf("now %s:\n got %q\nwant %q", tc.now, got, tc.want)
		}
	}
	if got := showValue(1e-300); got != "1e-300" {
		t.Errorf("showValue(1e-300) = %q", got)
	}
	if got := showValue(2.5e21); got != "2.5e21" {
		t.Errorf("showValue(2.5e21) = %q", got)
	}
}

// TestConfigDiffBF16GateUp: --bf16-gate-up is saved with a run's options
// only when given (a config from before the flag compares equal to one
// without it), and a resume that drops or adds it is told so: it changes
// the step's bits on CUDA.
func TestConfigDiffBF16GateUp(t *testing.T) {
	config := func(args ...string) []byte {
		t.Helper()
		var o Options
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		o.AddFlags(fs, 1e-5)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(&o)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	without, with := config(), config("--bf16-gate-up")
	if bytes.Contains(without, []byte("bf16_gate_up")) {
		t.Errorf("saved without the flag: %s", without)
	}
	if got := configDiff(without, without); got != nil {
		t.Errorf("without the flag both times: %q", got)
	}
	if got, want := configDiff(without, with), []string{`option "bf16_gate_up" differs: run has it unset, command gives true`}; !slices.Equal(got, want) {
		t.Errorf("adding --bf16-gate-up on resume: %q, want %q", got, want)
	}
	if got, want := configDiff(with, without), []string{`option "bf16_gate_up" differs: run has true, command leaves it unset`}; !slices.Equal(got, want) {
		t.Errorf("dropping --bf16-gate-up on resume: %q, want %q", got, want)
	}
}

package trainer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/train/model"
	"github.com/hone-rl/hone/train/tinymodel"
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

// TestBF16GateUpWarnsWhereItChangesNothing: Options.Loop passes
// --bf16-gate-up to the model's passes, and where they would not hold
// gate and up as bfloat16 (here: the CPU backend) it says so in the log,
// once; without the flag it says nothing.
func TestBF16GateUpWarnsWhereItChangesNothing(t *testing.T) {
	m := tinyCPUModel(t)
	ad, err := model.NewAdapter(&m.Config, model.AdapterConfig{Rank: 2, Alpha: 2, Targets: model.AllModules()}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, flag := range []bool{false, true} {
		var log bytes.Buffer
		o := Options{BF16GateUp: flag}
		l := o.Loop(&Prepared{Model: m, Ad: ad}, nil, 1, slog.New(slog.NewTextHandler(&log, nil)))
		if l.Train.GateUpBF16 != flag {
			t.Errorf("--bf16-gate-up %v: the loop's passes have GateUpBF16 %v", flag, l.Train.GateUpBF16)
		}
		if warned := strings.Count(log.String(), "--bf16-gate-up changes nothing here"); warned != map[bool]int{false: 0, true: 1}[flag] {
			t.Errorf("--bf16-gate-up %v on the CPU: warned %d times:\n%s", flag, warned, log.String())
		}
	}
}

// TestConfigDiffAddedLater: a key of addedLater (sft's inputs_sha256) is
// compared only when the run's saved config has it: a run saved before
// the key existed resumes as it did, one saved with it is told when it
// changes.
func TestConfigDiffAddedLater(t *testing.T) {
	old := []byte(`{"model": "m", "inputs": ["a.jsonl"]}`)
	withSHA := []byte(`{"model": "m", "inputs": ["a.jsonl"], "inputs_sha256": ["aa"]}`)
	other := []byte(`{"model": "m", "inputs": ["a.jsonl"], "inputs_sha256": ["bb"]}`)
	if d := configDiff(old, withSHA); len(d) != 0 {
		t.Errorf("a config from before inputs_sha256: %q", d)
	}
	if d := configDiff(withSHA, withSHA); len(d) != 0 {
		t.Errorf("same contents: %q", d)
	}
	if d := configDiff(withSHA, other); !slices.Equal(d, []string{`option "inputs_sha256" differs: run has ["aa"], command gives ["bb"]`}) {
		t.Errorf("changed contents: %q", d)
	}
}

// TestBackendChanges: a resume that gives another --device, --compute or
// (on the CPU) --threads than the run's saved config is told which; one
// whose saved config lacks the key (saved before it existed) is told
// nothing, and configDiff refuses none of them.
func TestBackendChanges(t *testing.T) {
	cpu1 := `{"model": "m", "device": "cpu", "compute": "f32", "threads": 1}`
	for _, c := range []struct {
		saved, now string
		want       []backendChange
	}{
		{cpu1, cpu1, nil},
		{`{"model": "m"}`, cpu1, nil},
		{cpu1, `{"model": "m"}`, nil},
		{cpu1, `{"model": "m", "device": "cuda", "compute": "bf16", "threads": 1}`,
			[]backendChange{{"device", `"cpu"`, `"cuda"`}, {"compute", `"f32"`, `"bf16"`}}},
		{cpu1, `{"model": "m", "device": "cpu", "compute": "f32", "threads": 4}`,
			[]backendChange{{"threads", "1", "4"}}},
		// A saved config from before "device" ran on the CPU.
		{`{"model": "m", "threads": 1}`, `{"model": "m", "threads": 2}`, []backendChange{{"threads", "1", "2"}}},
		// The CUDA backend takes no thread count.
		{`{"model": "m", "device": "cuda", "threads": 1}`, `{"model": "m", "device": "cuda", "threads": 8}`, nil},
	} {
		got := backendChanges([]byte(c.saved), []byte(c.now))
		if !slices.Equal(got, c.want) {
			t.Errorf("backendChanges(%s, %s) = %q, want %q", c.saved, c.now, got, c.want)
		}
		if d := configDiff([]byte(c.saved), []byte(c.now), backendKeys()...); len(d) != 0 {
			t.Errorf("configDiff(%s, %s) refuses %q", c.saved, c.now, d)
		}
	}
}

// TestConfigDiffPathSpellings: a resume that names the run's model folder,
// run folder, --init-adapter or (sft) input files another way — "./m" for
// "m", a trailing slash, the absolute path a cron job gives for the
// relative one typed by hand — is the same run; the error named "model"
// as differing ("run has \"m\", command gives \"./m\"") and refused it.
// Another folder, or the same files in another order, still differ.
func TestConfigDiffPathSpellings(t *testing.T) {
	t.Chdir(t.TempDir())
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	saved := []byte(`{"model": "models/tiny", "out": "adapters", "init_adapter": "adapters/w/step-000001", "inputs": ["a.jsonl", "d/b.jsonl"], "lr": 0.001}`)
	for _, now := range []string{
		`{"model": "./models/tiny", "out": "adapters/", "init_adapter": "adapters/w/./step-000001", "inputs": ["./a.jsonl", "d//b.jsonl"], "lr": 0.001}`,
		fmt.Sprintf(`{"model": %q, "out": %q, "init_adapter": %q, "inputs": [%q, %q], "lr": 0.001}`,
			filepath.Join(wd, "models/tiny"), filepath.Join(wd, "adapters"), filepath.Join(wd, "adapters/w/step-000001"),
			filepath.Join(wd, "a.jsonl"), filepath.Join(wd, "d/b.jsonl")),
	} {
		if d := configDiff(saved, []byte(now)); len(d) != 0 {
			t.Errorf("the same paths spelt %s: %q", now, d)
		}
	}
	for _, c := range []struct{ now, want string }{
		{`{"model": "models/big", "out": "adapters", "init_adapter": "adapters/w/step-000001", "inputs": ["a.jsonl", "d/b.jsonl"], "lr": 0.001}`,
			`option "model" differs: run has "models/tiny", command gives "models/big"`},
		{`{"model": "models/tiny", "out": "adapters", "init_adapter": "adapters/w/step-000001", "inputs": ["d/b.jsonl", "a.jsonl"], "lr": 0.001}`,
			`option "inputs" differs: run has ["a.jsonl","d/b.jsonl"], command gives ["d/b.jsonl","a.jsonl"]`},
		{`{"model": "models/tiny", "out": "adapters", "init_adapter": "adapters/w/step-000001", "inputs": ["a.jsonl", "d/b.jsonl"], "lr": 0.002}`,
			`option "lr" differs: run has 0.001, command gives 0.002`},
	} {
		if d := configDiff(saved, []byte(c.now)); !slices.Equal(d, []string{c.want}) {
			t.Errorf("now %s: %q, want %q", c.now, d, c.want)
		}
	}
	// An object-store URL is compared as written.
	if d := configDiff([]byte(`{"out": "s3://b/x"}`), []byte(`{"out": "s3://b/x/"}`)); len(d) != 1 {
		t.Errorf("URLs: %q", d)
	}
}

// TestIdleScheduleFlagsWarn: --warmup-steps under the default constant
// schedule, and --min-lr or --schedule-steps under any but cosine, change
// no learning rate (Schedule.At reads them only there); the run says so
// once each rather than training without the warm-up the user asked for.
// Where the schedule reads them, nothing is said.
func TestIdleScheduleFlagsWarn(t *testing.T) {
	m := tinyCPUModel(t)
	ad, err := model.NewAdapter(&m.Config, model.AdapterConfig{Rank: 2, Alpha: 2, Targets: model.AllModules()}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		o    Options
		want []string
	}{
		{Options{Schedule: "constant", Warmup: 10}, []string{"--warmup-steps 10 does nothing with --lr-schedule constant"}},
		{Options{Schedule: "warmup", Warmup: 10, MinLR: 1e-6, ScheduleSteps: 100},
			[]string{"--min-lr 1e-06 does nothing with --lr-schedule warmup", "--schedule-steps 100 does nothing with --lr-schedule warmup"}},
		{Options{Schedule: "cosine", Warmup: 10, MinLR: 1e-6, ScheduleSteps: 100}, nil},
		{Options{Schedule: "warmup", Warmup: 10}, nil},
		{Options{Schedule: "constant"}, nil},
	} {
		var log bytes.Buffer
		c.o.Loop(&Prepared{Model: m, Ad: ad}, nil, 1, slog.New(slog.NewTextHandler(&log, nil)))
		if got := strings.Count(log.String(), "level=WARN"); got != len(c.want) {
			t.Errorf("%+v: %d warnings, want %d:\n%s", c.o, got, len(c.want), log.String())
		}
		for _, w := range c.want {
			if !strings.Contains(log.String(), w) {
				t.Errorf("%+v: no warning %q:\n%s", c.o, w, log.String())
			}
		}
	}
	// The help of --warmup-steps names the schedules that read it.
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	new(Options).AddFlags(fs, 1e-5)
	if u := fs.Lookup("warmup-steps").Usage; !strings.Contains(u, "--lr-schedule warmup or cosine") {
		t.Errorf("--warmup-steps help %q does not say which schedules warm up", u)
	}
}

// TestConfigDiffKwargsByValue: --chat-template-kwargs is saved as the JSON
// text given, and a resume that writes the same object with other spacing
// or key order gives the template the same kwargs; it was refused
// (option "chat_template_kwargs" differs: run has "{\"enable_thinking\":false}",
// command gives "{\"enable_thinking\": false}"). Another value still differs.
func TestConfigDiffKwargsByValue(t *testing.T) {
	config := func(kw string) []byte {
		t.Helper()
		b, err := json.Marshal(&Options{Model: "m", TemplateKwargs: kw})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	saved := config(`{"enable_thinking":false,"n":1}`)
	for _, same := range []string{`{"enable_thinking":false,"n":1}`, `{ "enable_thinking": false, "n": 1.0 }`, `{"n":1,"enable_thinking":false}`} {
		if d := configDiff(saved, config(same)); len(d) != 0 {
			t.Errorf("kwargs %s: %q", same, d)
		}
	}
	for _, other := range []string{`{"enable_thinking":true,"n":1}`, `{"enable_thinking":false}`, ``} {
		if d := configDiff(saved, config(other)); len(d) != 1 || !strings.Contains(d[0], `option "chat_template_kwargs" differs`) {
			t.Errorf("kwargs %q: %q, want chat_template_kwargs named", other, d)
		}
	}
}

// TestConfigDiffTargetsBySet: --targets names a set of projections, each
// by its full or short name ("q" is q_proj), and the adapter does not
// depend on their order; a resume that lists the run's targets another way
// was refused (option "targets" differs). Another set still differs.
func TestConfigDiffTargetsBySet(t *testing.T) {
	saved := []byte(`{"model": "m", "targets": ["q_proj", "v_proj"]}`)
	for _, same := range []string{`["v_proj", "q_proj"]`, `["q", "v"]`, `["v", "q_proj"]`} {
		if d := configDiff(saved, []byte(`{"model": "m", "targets": `+same+`}`)); len(d) != 0 {
			t.Errorf("targets %s: %q", same, d)
		}
	}
	for _, other := range []string{`["q_proj"]`, `["q_proj", "v_proj", "o_proj"]`, `["q_proj", "x_proj"]`} {
		if d := configDiff(saved, []byte(`{"model": "m", "targets": `+other+`}`)); len(d) != 1 || !strings.Contains(d[0], `option "targets" differs`) {
			t.Errorf("targets %s: %q, want targets named", other, d)
		}
	}
	// NewAdapter's weights do not depend on the order the targets are given in.
	c, _ := tinymodel.Options{Hidden: 8, Layers: 1, Heads: 2}.Config()
	var ws [2][]float32
	for i, ts := range [][]model.Module{{model.ModQ, model.ModV}, {model.ModV, model.ModQ}} {
		ad, err := model.NewAdapter(&c, model.AdapterConfig{Rank: 2, Alpha: 2, Targets: ts}, 7)
		if err != nil {
			t.Fatal(err)
		}
		ad.Params(func(_ string, p, _ []float32) { ws[i] = append(ws[i], p...) })
	}
	if !slices.Equal(ws[0], ws[1]) {
		t.Error("NewAdapter's weights depend on the targets' order")
	}
}

package grpojob

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/train/checkpoint"
)

// TestKLPenaltyRunResume trains --norm art with --kl-penalty-coef through
// the model (the base model's logprobs from a pass with the adapter off):
// every step logs kl_policy_ref, the penalty changes what is trained, the
// coefficient and source are saved with the run's config, a run stopped
// after step 1 and resumed with them ends bit-identical to one that ran
// straight through, a resume without them is refused naming the option,
// and a run without the penalty saves neither key (so runs saved before
// the flag resume as they were).
func TestKLPenaltyRunResume(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	in := filepath.Join(dir, "a.parquet")
	writeGroups(t, md, in, 4, 4, varied)
	out := filepath.Join(dir, "adapters")
	opts := func(run string, steps int, coef float64) Options {
		o := baseOptions(md, out, run, in)
		o.Loss.Norm, o.PackedSeqLen, o.Steps = "art", 40, steps
		o.Loss.KLPenaltyCoef = coef
		if coef > 0 {
			o.Loss.KLPenaltySource = "sample"
		}
		return o
	}
	var log bytes.Buffer
	train := func(o Options) {
		t.Helper()
		if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
			t.Fatalf("%v\n%s", err, log.String())
		}
	}
	adapter := func(run string, step int) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(out, run, runfolder.StepName(step), "adapter_model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	savedLoss := func(run string, step int) map[string]any {
		t.Helper()
		b, err := (&checkpoint.Run{Dir: filepath.Join(out, run)}).ReadConfig(step)
		if err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			Loss map[string]any `json:"loss"`
		}
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
		return cfg.Loss
	}

	train(opts("straight", 2, 5))
	for i, r := range readMetrics(t, filepath.Join(out, "straight")) {
		if v, ok := r["kl_policy_ref"]; !ok || v == 0 || math.IsNaN(v) {
			t.Errorf("step %d: kl_policy_ref %v (logged: %v), want the rows' mean KL to the base model", i+1, v, ok)
		}
	}
	if l := savedLoss("straight", 2); l["kl_penalty_coef"] != 5.0 || l["kl_penalty_source"] != "sample" {
		t.Errorf("saved loss config %v, want kl_penalty_coef 5 and kl_penalty_source sample", l)
	}
	train(opts("plain", 2, 0))
	if l := savedLoss("plain", 2); l["kl_penalty_coef"] != nil || l["kl_penalty_source"] != nil {
		t.Errorf("a run without the penalty saved %v; runs saved before the flag lack both keys", l)
	}
	if bytes.Equal(adapter("straight", 2), adapter("plain", 2)) {
		t.Error("the KL penalty changed nothing the run trained")
	}

	train(opts("resumed", 1, 5))
	o := opts("resumed", 2, 5)
	o.Resume = true
	train(o)
	if !bytes.Equal(adapter("straight", 2), adapter("resumed", 2)) {
		t.Error("a resumed --kl-penalty-coef run differs from the uninterrupted one")
	}
	o = opts("resumed", 3, 0)
	o.Resume = true
	err := runWith(context.Background(), backend(t), o, textLog(&log))
	if err == nil || !strings.Contains(err.Error(), `option "loss.kl_penalty_coef" differs: run has 5, command leaves it unset`) {
		t.Errorf("resume without --kl-penalty-coef: %v", err)
	}

	// The run without the penalty resumes with the source's default given
	// in words, as a run saved before the flag does.
	o = opts("plain", 3, 0)
	o.Resume, o.Loss.KLPenaltySource = true, "current_learner"
	train(o)
}

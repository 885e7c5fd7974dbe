package cuda_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// torchBench is gpucheck/torch_bench.py, the PyTorch reference rows that
// `make gpu-check` ships beside run.sh.
const torchBench = "gpucheck/torch_bench.py"

// needTorch skips (or, under CI, fails) when /usr/bin/python3 has no torch
// (Debian's python3-torch).
func needTorch(t *testing.T) {
	t.Helper()
	if err := exec.Command("/usr/bin/python3", "-c", "import torch").Run(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI: /usr/bin/python3 with torch (Debian python3-torch) is required: %v", err)
		}
		t.Skipf("no torch for /usr/bin/python3 (%v)", err)
	}
}

// benchRecord holds the fields of torch_bench.py's JSON lines that the test reads.
type benchRecord struct {
	Shape          string         `json:"shape"`
	Mode           string         `json:"mode"`
	DType          string         `json:"dtype"`
	Device         string         `json:"device"`
	Implementation string         `json:"implementation"`
	FallbackReason *string        `json:"fallback_reason"`
	Torch          string         `json:"torch"`
	Transformers   *string        `json:"transformers"`
	PEFT           *string        `json:"peft"`
	TorchCompile   *bool          `json:"torch_compile"`
	Error          string         `json:"error"`
	Config         map[string]any `json:"config"`

	TokensPerS      float64   `json:"tokens_per_s"`
	PeakMemoryBytes float64   `json:"peak_memory_bytes"`
	PeakMemoryKind  string    `json:"peak_memory_kind"`
	Batch           int       `json:"batch"`
	Seq             int       `json:"seq"`
	Rank            int       `json:"rank"`
	WarmupSteps     int       `json:"warmup_steps"`
	TimedSteps      int       `json:"timed_steps"`
	StepSeconds     []float64 `json:"step_seconds"`
	Losses          []float64 `json:"losses"`
	Attention       string    `json:"attention"`
	LoraDType       string    `json:"lora_dtype"`
	TrainableParams int       `json:"trainable_params"`
	LoraTensors     int       `json:"lora_tensors"`
	LoraChanged     *int      `json:"lora_tensors_changed"`
	FrozenTensors   int       `json:"frozen_tensors"`
	FrozenChanged   *int      `json:"frozen_tensors_changed"`
	NewTokens       int       `json:"new_tokens"`
	Prompt          int       `json:"prompt"`

	Case              string  `json:"case"`
	MaxRelErrLogits   float64 `json:"max_rel_err_logits"`
	MaxRelErrLogprobs float64 `json:"max_rel_err_logprobs"`
	MaxRelErrGrads    float64 `json:"max_rel_err_grads"`
	OK                *bool   `json:"ok"`

	MicroBatch int `json:"micro_batch"`
	OOMRetries int `json:"oom_retries"`
}

// readRecords parses torch_bench.py's JSON Lines file.
func readRecords(t *testing.T, path string) []benchRecord {
	t.Helper()
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left behind: %v", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var recs []benchRecord
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r benchRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%s line %d: %v: %s", path, i+1, err, line)
		}
		recs = append(recs, r)
	}
	return recs
}

func runTorchBench(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	// Opened here so that go test's cache sees the script change.
	if _, err := os.ReadFile(torchBench); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/bin/python3", append([]string{torchBench}, args...)...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// TestTorchBenchTiny runs the reference rows on the CPU on the tiny shape
// (bfloat16, as on the device). Here transformers and PEFT are not
// installed, so the plain-torch decoder and LoRA run. Its math is checked
// first against the qwen2 model golden (float32 against reference.py's
// float64: logits, logprobs and LoRA gradients). Then the training step
// must hand AdamW exactly the LoRA weights (their count from the shape),
// change every one of them and no frozen weight, and lower the loss of the
// batch it repeats; decode must report its rate; every record carries the
// versions and which implementation ran.
func TestTorchBenchTiny(t *testing.T) {
	needTorch(t)
	out := filepath.Join(t.TempDir(), "tiny.jsonl")
	stdout, stderr, err := runTorchBench(t, "--device", "cpu", "--tiny", "--threads", "1", "--out", out,
		"--measure", "golden,train,decode", "--golden", "../../testdata/golden/model/qwen2")
	if err != nil {
		t.Fatalf("torch_bench.py: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	if n := strings.Count(stdout, "RESULT "); n != 3 {
		t.Errorf("stdout has %d RESULT lines, want 3:\n%s", n, stdout)
	}
	recs := readRecords(t, out)
	if len(recs) != 3 || recs[0].Mode != "golden" || recs[1].Mode != "train" || recs[2].Mode != "decode" {
		t.Fatalf("records: %+v, want golden, train, decode", recs)
	}
	g := recs[0]
	if g.Case != "qwen2" || g.Implementation != "plain-torch" || g.OK == nil || !*g.OK || g.LoraTensors != 16 {
		t.Errorf("golden: case %q implementation %q ok %v LoRA tensors %d", g.Case, g.Implementation, g.OK, g.LoraTensors)
	}
	for what, e := range map[string]float64{"logits": g.MaxRelErrLogits, "logprobs": g.MaxRelErrLogprobs, "LoRA gradients": g.MaxRelErrGrads} {
		if !(e >= 0 && e < 2e-5) {
			t.Errorf("golden: %s relative error %v, want < 2e-5 (float32 against float64)", what, e)
		}
	}
	recs = recs[1:]
	hf := exec.Command("/usr/bin/python3", "-c", "import transformers, peft").Run() == nil
	for _, r := range recs {
		if r.Error != "" {
			t.Fatalf("%s: error %q", r.Mode, r.Error)
		}
		if r.Shape != "tiny" || r.DType != "bfloat16" || r.Device != "cpu" || r.Torch == "" || r.TorchCompile == nil || *r.TorchCompile {
			t.Errorf("%s: shape %q dtype %q device %q torch %q torch_compile %v", r.Mode, r.Shape, r.DType, r.Device, r.Torch, r.TorchCompile)
		}
		if hf {
			if r.Implementation != "transformers+peft" || r.Transformers == nil || r.PEFT == nil {
				t.Errorf("%s: implementation %q with transformers and peft installed", r.Mode, r.Implementation)
			}
		} else if r.Implementation != "plain-torch" || r.FallbackReason == nil || !strings.Contains(*r.FallbackReason, "transformers") {
			t.Errorf("%s: implementation %q, fallback reason %v: want plain-torch, saying transformers is missing", r.Mode, r.Implementation, r.FallbackReason)
		}
		if !(r.TokensPerS > 0) || !(r.PeakMemoryBytes > 0) || r.PeakMemoryKind == "" {
			t.Errorf("%s: tokens/s %v, peak memory %v (%q): want positive", r.Mode, r.TokensPerS, r.PeakMemoryBytes, r.PeakMemoryKind)
		}
		for k, want := range map[string]float64{"vocab": 320, "hidden": 64, "layers": 2, "heads": 4, "kv_heads": 2, "inter": 160} {
			if r.Config[k] != want {
				t.Errorf("%s: config %s = %v, want %v", r.Mode, k, r.Config[k], want)
			}
		}
	}

	tr := recs[0]
	if tr.Batch != 2 || tr.Seq != 32 || tr.Rank != 16 || tr.TimedSteps < 2 {
		t.Errorf("train: batch %d seq %d rank %d timed steps %d", tr.Batch, tr.Seq, tr.Rank, tr.TimedSteps)
	}
	// LoRA on q, k, v, o, gate, up, down of each of 2 layers: rank × (in + out).
	const c, kv, inter, layers = 64, 32, 160, 2 // hidden, KV heads × head dim, MLP width
	perLayer := 16 * ((c + c) + 2*(c+kv) + (c + c) + 3*(c+inter))
	if tr.TrainableParams != layers*perLayer || tr.LoraTensors != layers*7*2 {
		t.Errorf("train: AdamW holds %d parameters in %d tensors, want the LoRA weights: %d in %d",
			tr.TrainableParams, tr.LoraTensors, layers*perLayer, layers*7*2)
	}
	if tr.LoraChanged == nil || *tr.LoraChanged != tr.LoraTensors {
		t.Errorf("train: %s of %d LoRA tensors changed, want all", intOrNil(tr.LoraChanged), tr.LoraTensors)
	}
	if tr.FrozenChanged == nil || *tr.FrozenChanged != 0 || tr.FrozenTensors < 3+12*layers {
		t.Errorf("train: %s of %d frozen tensors changed, want none of at least %d", intOrNil(tr.FrozenChanged), tr.FrozenTensors, 3+12*layers)
	}
	if tr.LoraDType != "float32" {
		t.Errorf("train: LoRA weights in %q, want float32 (as PEFT keeps them beside bf16 layers)", tr.LoraDType)
	}
	if n := tr.WarmupSteps + tr.TimedSteps; len(tr.Losses) != n || len(tr.StepSeconds) != n {
		t.Fatalf("train: %d losses and %d step times, want %d", len(tr.Losses), len(tr.StepSeconds), n)
	}
	for i, l := range tr.Losses {
		if math.IsNaN(l) || math.IsInf(l, 0) || !(tr.StepSeconds[i] > 0) {
			t.Errorf("train: step %d loss %v in %v s", i, l, tr.StepSeconds[i])
		}
	}
	if first, last := tr.Losses[0], tr.Losses[len(tr.Losses)-1]; !(last < first-0.01) {
		t.Errorf("train: the loss of the repeated batch went %v → %v, want it lower: %v", first, last, tr.Losses)
	}
	if tr.Attention == "" {
		t.Error("train: attention implementation not recorded")
	}

	dec := recs[1]
	if dec.Batch != 4 || dec.Prompt != 8 || dec.NewTokens != 8 {
		t.Errorf("decode: batch %d prompt %d new tokens %d", dec.Batch, dec.Prompt, dec.NewTokens)
	}

	// After an out-of-memory error (made up here) the step runs again in
	// micro-batches of half the size, accumulating gradients: the same
	// losses as the whole batch, up to rounding.
	out = filepath.Join(t.TempDir(), "micro.jsonl")
	stdout, stderr, err = runTorchBench(t, "--device", "cpu", "--tiny", "--threads", "1", "--out", out,
		"--measure", "train", "--fake-oom-above", "1")
	if err != nil {
		t.Fatalf("torch_bench.py --fake-oom-above 1: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	recs = readRecords(t, out)
	if len(recs) != 1 || recs[0].MicroBatch != 1 || recs[0].OOMRetries != 1 || len(recs[0].Losses) != len(tr.Losses) {
		t.Fatalf("after a made-up out-of-memory error: %+v, want one train record with micro-batch 1 after 1 retry", recs)
	}
	if tr.MicroBatch != 2 || tr.OOMRetries != 0 {
		t.Errorf("train: micro-batch %d after %d retries, want the whole batch (2) at once", tr.MicroBatch, tr.OOMRetries)
	}
	for i, l := range recs[0].Losses {
		if d := math.Abs(l - tr.Losses[i]); d > 1e-3+1e-2*math.Abs(tr.Losses[i]) {
			t.Errorf("step %d: loss %v in micro-batches of 1, %v in one batch of 2", i, l, tr.Losses[i])
		}
	}
}

// TestTorchBenchBadFlags: a bad option is refused before torch is imported,
// naming the option.
func TestTorchBenchBadFlags(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--measure", "train,bogus", "--out", "x"}, "bogus"},
		{[]string{"--batch", "0", "--out", "x"}, "--batch"},
		{[]string{"--shape", "13b", "--out", "x"}, "13b"},
		{[]string{"--tiny"}, "--out"},
	} {
		_, stderr, err := runTorchBench(t, tc.args...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: %v, stderr %q: want exit status 2 naming %q", tc.args, err, stderr, tc.want)
		}
	}
}

func intOrNil(p *int) string {
	if p == nil {
		return "(missing)"
	}
	return strconv.Itoa(*p)
}

// TestTorchBenchFallback: where transformers and PEFT import but a row
// fails with them (here a stand-in transformers without Qwen2ForCausalLM),
// the row is recorded as failed, measured again with the plain decoder
// (saying why), and the script exits 1.
func TestTorchBenchFallback(t *testing.T) {
	needTorch(t)
	site := t.TempDir()
	for mod, body := range map[string]string{
		"transformers": "__version__ = \"0.0-stand-in\"\n",
		"peft":         "__version__ = \"0.0-stand-in\"\n",
	} {
		if err := os.MkdirAll(filepath.Join(site, mod), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(site, mod, "__init__.py"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "fallback.jsonl")
	t.Setenv("PYTHONPATH", site)
	stdout, stderr, err := runTorchBench(t, "--device", "cpu", "--tiny", "--threads", "1", "--measure", "train", "--out", out)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("torch_bench.py: %v, want exit status 1\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	recs := readRecords(t, out)
	if len(recs) != 2 {
		t.Fatalf("%d records, want the failed one and the plain decoder's: %+v", len(recs), recs)
	}
	if r := recs[0]; r.Implementation != "transformers+peft" || !strings.Contains(r.Error, "Qwen2ForCausalLM") ||
		r.Transformers == nil || *r.Transformers != "0.0-stand-in" {
		t.Errorf("first record: implementation %q error %q transformers %v", r.Implementation, r.Error, r.Transformers)
	}
	if r := recs[1]; r.Implementation != "plain-torch" || r.Error != "" || r.FallbackReason == nil ||
		!strings.HasPrefix(*r.FallbackReason, "transformers+peft failed: ") || !(r.TokensPerS > 0) {
		t.Errorf("second record: implementation %q error %q fallback %v tokens/s %v", r.Implementation, r.Error, r.FallbackReason, r.TokensPerS)
	}
}

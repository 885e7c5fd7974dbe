package cmdcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/peft"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/train/checkpoint"
)

// flow is one run of the check: the two binaries, the inputs, where the
// runs and logs go, and the devices compared (the device under test
// against the reference, the CPU).
type flow struct {
	train, serve string // hone-train and hone-serve
	model        string // a tiny model folder (hone-train init-model)
	scored       string // a scored trajectory file (WriteScored)
	out          string // runs/, serve-adapters/, logs/
	device       string // the device under test: cuda, or cpu when checking the check
	tag          string // names its runs (the device, or cpu-again for cpu)
	dtypes       []string
	env          []string // the processes' extra environment
	edgesEnv     []string // and that of the --cuda-sync edges run (the emulated device's deferred mode)
}

// report prints a line that run.sh copies into the device check's
// summary, and logs it.
func report(t *testing.T, format string, args ...any) {
	t.Helper()
	line := fmt.Sprintf(format, args...)
	fmt.Printf("CMDCHECK %s\n", line)
	t.Log(line)
}

// hone runs hone-train with args on device (the job and its flags; the
// device and the scored file are appended), its output in
// logs/NAME.log. A failing command, or a backend that still held memory
// when it closed (hone-train logs it), fails the test.
func (f *flow) hone(t *testing.T, name, device string, args ...string) {
	t.Helper()
	args = append(args, "--device", device, f.scored)
	cmd := exec.Command(f.train, args...)
	cmd.Env = append(os.Environ(), f.env...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	start := time.Now()
	err := cmd.Run()
	logPath := filepath.Join(f.out, "logs", name+".log")
	if werr := os.WriteFile(logPath, fmt.Appendf(nil, "$ %s %s\n%s", f.train, strings.Join(args, " "), buf.Bytes()), 0o644); werr != nil {
		t.Fatal(werr)
	}
	if err != nil {
		t.Fatalf("hone-train %v: %v\n%s", args, err, buf.String())
	}
	if strings.Contains(buf.String(), "closing the backend") {
		t.Errorf("hone-train %v left memory on the backend:\n%s", args, buf.String())
	}
	t.Logf("%s: %v", name, time.Since(start).Round(time.Millisecond))
}

// jobArgs are the flags of each job: steps steps, LoRA rank 4, lr 1e-3 (as
// hone-train's CUDA test), on the scored file's four groups (grpo: two
// groups per step).
func (f *flow) jobArgs(job, run, dtype string, steps int) []string {
	args := []string{job, "--model", f.model, "--out", filepath.Join(f.out, "runs"), "--run", run,
		"--rank", "4", "--lr", "1e-3", "--seed", "1", "--dtype", dtype, "--steps", fmt.Sprint(steps)}
	if job == "grpo" {
		args = append(args, "--groups-per-step", "2")
	}
	return args
}

func (f *flow) run(name string) string { return filepath.Join(f.out, "runs", name) }

// check runs the whole flow: train in the first precision, resume, serve,
// then train in the others (so that a run cut by its time limit has
// checked the most first).
func (f *flow) check(t *testing.T) {
	for _, d := range []string{"runs", "logs", "serve-adapters"} {
		if err := os.MkdirAll(filepath.Join(f.out, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	train := func(dtype string) {
		for _, job := range []string{"sft", "grpo"} {
			t.Run(job+"-"+dtype, func(t *testing.T) { f.checkTrain(t, job, dtype) })
		}
	}
	train(f.dtypes[0])
	t.Run("grpo-resume", f.checkResume)
	if f.device == "cuda" { // the flags are the CUDA backend's (exit 2 elsewhere)
		t.Run("grpo-cuda-sync-edges", f.checkEdges)
	}
	t.Run("serve", f.checkServe)
	for _, dtype := range f.dtypes[1:] {
		train(dtype)
	}
	if f.device == "cuda" && slices.Contains(f.dtypes, "bfloat16") {
		t.Run("grpo-cuda-attention-gemm", f.checkGEMM)
	}
	report(t, "total %.1fs", time.Since(start).Seconds())
}

// checkTrain runs job on the CPU and on the device under test and compares
// every metrics row and the adapters of both steps.
func (f *flow) checkTrain(t *testing.T, job, dtype string) {
	ref, dut := job+"-cpu-"+dtype, job+"-"+f.tag+"-"+dtype
	f.hone(t, ref, "cpu", f.jobArgs(job, ref, dtype, 2)...)
	f.hone(t, dut, f.device, f.jobArgs(job, dut, dtype, 2)...)
	mw, err := CompareMetrics(f.run(ref), f.run(dut), MetricTol)
	if err != nil {
		t.Fatalf("%s against the CPU: %v", dut, err)
	}
	var aw [2]float64
	for i := range aw {
		step := runfolder.StepName(i + 1)
		if aw[i], err = CompareAdapters(filepath.Join(f.run(ref), step), filepath.Join(f.run(dut), step), AdapterTol); err != nil {
			t.Fatalf("%s against the CPU: %v", dut, err)
		}
	}
	rows, err := Metrics(f.run(dut))
	if err != nil {
		t.Fatal(err)
	}
	report(t, "%s %s: %s matches the cpu: loss %v, metrics rel err %.2g (bound %g), adapters rel err %.2g, %.2g after steps 1, 2 (bound %g)",
		job, dtype, f.device, rows[len(rows)-1]["loss"], mw, MetricTol, aw[0], aw[1], AdapterTol)
}

// checkResume runs grpo on the device under test for one step, then
// --resume to the second, and checks the adapter, the optimizer state and
// the metrics are those of the uninterrupted run, bit for bit.
func (f *flow) checkResume(t *testing.T) {
	dtype := f.dtypes[0]
	whole := "grpo-" + f.tag + "-" + dtype
	if _, err := os.Stat(f.run(whole)); err != nil {
		f.hone(t, whole, f.device, f.jobArgs("grpo", whole, dtype, 2)...)
	}
	split := whole + "-resumed"
	f.hone(t, split+"-1", f.device, f.jobArgs("grpo", split, dtype, 1)...)
	f.hone(t, split+"-2", f.device, append(f.jobArgs("grpo", split, dtype, 2), "--resume")...)
	step := runfolder.StepName(2)
	if err := SameFiles(filepath.Join(f.run(whole), step), filepath.Join(f.run(split), step), peft.WeightsName, checkpoint.OptimizerName); err != nil {
		t.Fatalf("grpo stopped after step 1 and resumed: %v", err)
	}
	if err := SameMetrics(f.run(whole), f.run(split)); err != nil {
		t.Fatalf("grpo stopped after step 1 and resumed: %v", err)
	}
	report(t, "grpo %s: stopped after step 1 and resumed on %s: step 2's adapter, optimizer state and metrics bit-identical to the uninterrupted run", dtype, f.device)
}

// checkEdges runs grpo on the device with --cuda-sync edges (the
// stream-ordered mode: the same kernels in the same order, fewer waits)
// and checks its metrics and adapters are the synchronized run's, bit for
// bit.
func (f *flow) checkEdges(t *testing.T) {
	dtype := f.dtypes[0]
	whole := "grpo-" + f.tag + "-" + dtype
	if _, err := os.Stat(f.run(whole)); err != nil {
		f.hone(t, whole, f.device, f.jobArgs("grpo", whole, dtype, 2)...)
	}
	edges := whole + "-edges"
	fe := *f
	fe.env = append(slices.Clone(f.env), f.edgesEnv...)
	fe.hone(t, edges, f.device, append(f.jobArgs("grpo", edges, dtype, 2), "--cuda-sync", "edges")...)
	for i := range 2 {
		step := runfolder.StepName(i + 1)
		if err := SameFiles(filepath.Join(f.run(whole), step), filepath.Join(f.run(edges), step), peft.WeightsName); err != nil {
			t.Fatalf("grpo --cuda-sync edges against each op synchronized: %v", err)
		}
	}
	if err := SameMetrics(f.run(whole), f.run(edges)); err != nil {
		t.Fatalf("grpo --cuda-sync edges against each op synchronized: %v", err)
	}
	report(t, "grpo %s: %s --cuda-sync edges: adapters of steps 1, 2 and metrics bit-identical to the run synchronizing each op", dtype, f.device)
}

// checkGEMM runs grpo on the device in the bf16 precision (bfloat16
// weights, --compute bf16) with --cuda-attention gemm and --bf16-gate-up
// (the MLP's gate and up held as bfloat16) and checks every metrics row
// against the CPU's f32 compute on the same weights within
// BF16MetricTol. The adapters are not compared: GRPO's advantages cancel
// some gradient entries to about AdamW's ε, where the bf16 rounding decides
// the sign of the first update of a zero-initialised lora_B (measured on
// the emulated device: 0.12 and 0.09 norm-wise after steps 1 and 2 against
// the CPU, and as much against the device's own tc1 run in the bf16
// precision). The attention runs on the GEMM path for head dims a multiple
// of 16 (the device check's model: 64 / 4 heads); other dims run the
// float32 kernels, and the report says so.
func (f *flow) checkGEMM(t *testing.T) {
	const dtype = "bfloat16"
	ref := "grpo-cpu-" + dtype
	if _, err := os.Stat(f.run(ref)); err != nil {
		f.hone(t, ref, "cpu", f.jobArgs("grpo", ref, dtype, 2)...)
	}
	dut := "grpo-" + f.tag + "-bf16-gemm"
	f.hone(t, dut, f.device, append(f.jobArgs("grpo", dut, dtype, 2), "--compute", "bf16", "--cuda-attention", "gemm", "--bf16-gate-up")...)
	mw, err := CompareMetrics(f.run(ref), f.run(dut), BF16MetricTol)
	if err != nil {
		t.Fatalf("%s against the CPU: %v", dut, err)
	}
	report(t, "grpo %s: %s --compute bf16 --cuda-attention gemm --bf16-gate-up (head dim %s): metrics within bf16 bounds of the cpu's f32 compute: rel err %.2g (bound %g); adapters not compared (bf16 decides near-ε updates' signs)",
		dtype, f.device, f.headDim(t), mw, BF16MetricTol)
}

// headDim reads the model's head dim (hidden_size / num_attention_heads)
// from its config.json, for the reports.
func (f *flow) headDim(t *testing.T) string {
	b, err := os.ReadFile(filepath.Join(f.model, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Hidden  int `json:"hidden_size"`
		Heads   int `json:"num_attention_heads"`
		HeadDim int `json:"head_dim"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("%s: %v", f.model, err)
	}
	if c.HeadDim == 0 && c.Heads > 0 {
		c.HeadDim = c.Hidden / c.Heads
	}
	d := fmt.Sprint(c.HeadDim)
	if c.HeadDim%16 != 0 || c.HeadDim > 128 {
		d += ": not a tensor-core dim, the float32 attention ran"
	}
	return d
}

// checkServe starts hone-serve on the CPU and on the device under test,
// watching one adapters folder; asks each for the same greedy answer of
// the base model; publishes the device's sft adapter (step 2) into the
// folder; asks each again through it; and stops both with SIGTERM.
func (f *flow) checkServe(t *testing.T) {
	ctx := context.Background()
	adapters := filepath.Join(f.out, "serve-adapters")
	servers := map[string]*Server{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, device := range []string{"cpu", f.device} {
		wg.Go(func() {
			args := []string{"--model", f.model, "--adapters", adapters, "--poll-interval", "100ms", "--port", "0",
				"--served-model-name", "base", "--device", device}
			s, err := Start(ctx, f.serve, filepath.Join(f.out, "logs", "serve-"+device+".log"), 30*time.Second, f.env, args...)
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			servers[device] = s
			mu.Unlock()
		})
		if device == f.device {
			break // cpu against cpu: one server answers for both
		}
	}
	wg.Wait()
	close(errs)
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		for device, s := range servers {
			if err := s.Stop(20 * time.Second); err != nil {
				t.Errorf("hone-serve --device %s: %v", device, err)
			}
		}
	}
	defer stop()
	for err := range errs {
		t.Fatal(err)
	}
	ask := func(model string) (Answer, Answer) {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		want, err := servers["cpu"].Chat(ctx, model, "hello there", 8)
		if err != nil {
			t.Fatalf("hone-serve --device cpu, model %s: %v", model, err)
		}
		got, err := servers[f.device].Chat(ctx, model, "hello there", 8)
		if err != nil {
			t.Fatalf("hone-serve --device %s, model %s: %v", f.device, model, err)
		}
		d, err := SameAnswer(want, got, LogprobTol)
		if err != nil {
			t.Fatalf("model %s: hone-serve --device %s against --device cpu: %v", model, f.device, err)
		}
		report(t, "serve %s: %s answers the cpu's greedy tokens %v (%q), logprobs within %.2g (bound %g)", model, f.device, got.TokenIDs, got.Content, d, LogprobTol)
		return want, got
	}
	base, _ := ask("base")
	src := filepath.Join(f.run("sft-"+f.tag+"-"+f.dtypes[0]), runfolder.StepName(2))
	if err := PublishStep(src, adapters, "sft", 2); err != nil {
		t.Fatal(err)
	}
	for device, s := range servers {
		if err := s.WaitModel(ctx, "sft", 30*time.Second); err != nil {
			t.Fatalf("hone-serve --device %s: hot reload: %v", device, err)
		}
	}
	tuned, got := ask("sft")
	if got.Model != "sft@2" || tuned.Model != "sft@2" {
		t.Fatalf("answers through the published adapter name %q (cpu %q), want sft@2", got.Model, tuned.Model)
	}
	shift, err := LogprobShift(base, tuned)
	switch {
	case err == nil && shift < MinAdapterShift:
		t.Fatalf("the adapter moved the answer's logprobs by %.2g, under %g: the check cannot tell it was used", shift, MinAdapterShift)
	case err == nil:
		report(t, "serve: hot reload: the next answer went through sft@2 (logprobs moved %.2g from the base model's)", shift)
	default:
		report(t, "serve: hot reload: the next answer went through sft@2 (other tokens than the base model's)")
	}
	stop()
	for device := range servers {
		log, err := os.ReadFile(filepath.Join(f.out, "logs", "serve-"+device+".log"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(log), "closing the backend") {
			t.Errorf("hone-serve --device %s left memory on the backend:\n%s", device, log)
		}
	}
	if !t.Failed() {
		report(t, "serve: every hone-serve exited 0 after SIGTERM, its backend freed")
	}
}

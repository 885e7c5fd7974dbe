package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/cmd/internal/testbin"
	"github.com/hone-rl/hone/format/peft"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/format/safetensors"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/train/tinymodel"
)

// The CUDA runs must agree with the CPU runs within these relative errors.
// The two backends sum in different orders (the emulated cuBLAS in
// float64, the kernels' reductions by warps and blocks, the CPU backend by
// its own blocking): float32 rounding differences of about 1e-6 relative,
// grown through a few layers. The step's loss, entropy and gradient norm
// are sums over many terms and stay within metricTol = 1e-4. The adapter
// after one AdamW step is compared norm-wise (‖cuda − cpu‖₂ / ‖cpu‖₂ per
// tensor) within adapterTol = 1e-3: the first AdamW update of a weight is
// lr·g/(|g|+ε), ±lr whatever g's precision when |g| ≫ ε, but GRPO's
// group-relative advantages sum to zero, so some gradient entries cancel to
// about ε = 1e-8, where the float32 rounding of the terms decides the
// update (measured: one lora_B entry 1.1e-6 apart, 1.1e-3 of the tensor's
// largest value, 1.4e-4 norm-wise; sft's adapters agree to 2e-7
// norm-wise). Both bounds still catch a wrong operand, a missing term or a
// step of the wrong sign (errors of 1e-1 and more).
const (
	metricTol  = 1e-4
	adapterTol = 1e-3
)

// TestDeviceCUDATrains runs hone-train sft and grpo as processes with
// --device cuda on the emulating CUDA libraries (HONE_LIBCUDA,
// HONE_LIBCUBLAS: the real loader, the embedded PTX handed to the driver,
// the kernels launched through cuLaunchKernel) and the same runs with
// --device cpu, on the tiny two-layer model, and checks the step's metrics
// and the adapters they write agree (metricTol, adapterTol) and that the
// CUDA runs leave no device memory behind (hone-train logs what its
// backend still held when it closes).
//
// The emulator runs one OS thread per CUDA thread: the two CUDA runs take
// 48 s and 89 s (measured on two shared cores), so the test runs in `make test-long`
// (HONE_LONG_TESTS=1); TestDeviceCUDASFT is its short form.
func TestDeviceCUDATrains(t *testing.T) {
	if os.Getenv("HONE_LONG_TESTS") == "" || testing.Short() {
		t.Skip("hone-train sft and grpo on the emulated CUDA device take about 2 minutes: run by `make test-long` (HONE_LONG_TESTS=1)")
	}
	trainOnCUDA(t, 2, "sft", "grpo")
}

// TestDeviceCUDASFT is TestDeviceCUDATrains for one sft step on a
// one-layer model.
func TestDeviceCUDASFT(t *testing.T) {
	trainOnCUDA(t, 1, "sft")
}

// trainOnCUDA runs each job (sft, grpo) for one step on a tiny model of
// the given number of layers with --device cpu and with --device cuda on
// the emulating libraries, and compares the two.
func trainOnCUDA(t *testing.T, layers int, jobs ...string) {
	dir := t.TempDir()
	if err := tinymodel.Write(context.Background(), filepath.Join(dir, "model"), tinymodel.Options{Hidden: 32, Layers: layers, Heads: 4, KVHeads: 2}, ref.New()); err != nil {
		t.Fatal(err)
	}
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	chats := filepath.Join(dir, "chats.jsonl")
	if err := os.WriteFile(chats, []byte(`{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":"mv1"}]}
{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":"mv2"}]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	libs := testbin.EmulatedCUDA(t, "../../kernels/cuda")
	out := filepath.Join(dir, "adapters")
	libLt := libs.BLASLt // HONE_LIBCUBLASLT of the runs
	deferred := ""       // HONE_FAKE_CUDA_DEFERRED of the runs: the emulated device's deferred mode when set
	exec1 := func(device string, args ...string) (string, error) {
		t.Helper()
		args = append(args, "--device", device, "--threads", "1")
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "HONE_TRAIN_TEST_MAIN=1", "HONE_LIBCUDA="+libs.Driver, "HONE_LIBCUBLAS="+libs.BLAS, "HONE_LIBCUBLASLT="+libLt, "HONE_FAKE_CUDA_DEFERRED="+deferred)
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		start := time.Now()
		err := cmd.Run()
		t.Logf("%s %s: %v", args[0], device, time.Since(start).Round(time.Millisecond))
		return buf.String(), err
	}
	run := func(device string, args ...string) string {
		t.Helper()
		out, err := exec1(device, args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		if strings.Contains(out, "closing the backend") {
			t.Errorf("%v left memory on the backend:\n%s", args, out)
		}
		return out
	}
	input := map[string]string{"sft": chats, "grpo": filepath.Join(dir, "s")}
	for _, device := range []string{"cpu", "cuda"} {
		for _, job := range jobs {
			run(device, job, "--model", md, "--out", out, "--run", job+"-"+device, "--rank", "2", "--steps", "1", "--lr", "1e-3", input[job])
		}
	}
	for _, job := range jobs {
		want, got := readMetrics(t, filepath.Join(out, job+"-cpu")), readMetrics(t, filepath.Join(out, job+"-cuda"))
		for _, k := range []string{"loss", "entropy", "grad_norm"} {
			w, okw := want[k].(float64)
			g, okg := got[k].(float64)
			if !okw || !okg || math.Abs(g-w) > metricTol*math.Abs(w) {
				t.Errorf("%s: metric %s: %v on CUDA, %v on the CPU, want within %g relative", job, k, got[k], want[k], metricTol)
			}
		}
		t.Logf("%s: loss %v (cpu %v), grad_norm %v (cpu %v)", job, got["loss"], want["loss"], got["grad_norm"], want["grad_norm"])
		step := "step-000001"
		wa := readAdapter(t, filepath.Join(out, job+"-cpu", step))
		ga := readAdapter(t, filepath.Join(out, job+"-cuda", step))
		if len(ga) != len(wa) || len(wa) == 0 {
			t.Fatalf("%s: the CUDA adapter has %d tensors, the CPU one %d", job, len(ga), len(wa))
		}
		worst := 0.0
		for name, w := range wa {
			g, ok := ga[name]
			if !ok || len(g) != len(w) {
				t.Fatalf("%s: tensor %s: %d values on CUDA, %d on the CPU", job, name, len(g), len(w))
			}
			var diff, norm float64
			for i := range w {
				d := float64(g[i]) - float64(w[i])
				diff += d * d
				norm += float64(w[i]) * float64(w[i])
			}
			rel := math.Sqrt(diff / norm)
			if norm == 0 || math.IsNaN(rel) || rel > adapterTol {
				t.Errorf("%s: tensor %s: ‖cuda − cpu‖ / ‖cpu‖ = %g, want ≤ %g", job, name, rel, adapterTol)
			}
			worst = max(worst, rel)
		}
		t.Logf("%s: worst relative error over %d adapter tensors %.3g", job, len(wa), worst)
	}
	// --cuda-sync edges queues the same kernels in the same order: the
	// same bits. The emulating driver runs in its deferred mode
	// (HONE_FAKE_CUDA_DEFERRED): launches, GEMMs and memsets run only at
	// the synchronization points, so a wait the backend leaves out reads
	// memory the queued work has not written yet and the run differs (or
	// fails).
	deferred = libs.Driver
	for _, job := range jobs {
		run("cuda", job, "--model", md, "--out", out, "--run", job+"-cuda-edges", "--rank", "2", "--steps", "1", "--lr", "1e-3", "--cuda-sync", "edges", input[job])
		sameRun(t, out, job+"-cuda", job+"-cuda-edges", "--cuda-sync edges")
	}
	deferred = ""
	// --cuda-attention gemm in the bf16 precision against tc1, the default,
	// on a model of head dim 16 (the tensor-core attentions' smallest; at
	// 8 both run attention.cu): the same rounding points, other summation
	// orders.
	md16 := filepath.Join(dir, "model-d16")
	if err := tinymodel.Write(context.Background(), md16, tinymodel.Options{Hidden: 64, Layers: layers, Heads: 4, KVHeads: 2}, ref.New()); err != nil {
		t.Fatal(err)
	}
	for _, job := range jobs {
		for _, attn := range []string{"tc1", "gemm"} {
			run("cuda", job, "--model", md16, "--out", out, "--run", job+"-cuda-bf16-"+attn, "--rank", "2", "--steps", "1", "--lr", "1e-3",
				"--dtype", "bfloat16", "--compute", "bf16", "--cuda-attention", attn, input[job])
		}
		want, got := readMetrics(t, filepath.Join(out, job+"-cuda-bf16-tc1")), readMetrics(t, filepath.Join(out, job+"-cuda-bf16-gemm"))
		for _, k := range []string{"loss", "entropy", "grad_norm"} {
			w, okw := want[k].(float64)
			g, okg := got[k].(float64)
			if !okw || !okg || math.Abs(g-w) > kernels.BF16ComputeTol*math.Abs(w) {
				t.Errorf("%s: metric %s: %v with --cuda-attention gemm, %v with tc1, want within %g relative", job, k, got[k], want[k], kernels.BF16ComputeTol)
			}
			t.Logf("%s bf16: %s gemm %v, tc1 %v", job, k, g, w)
		}
		// Bit-equal results would mean the flag never reached the backend
		// (measured on sft: loss 5.652009 against 5.651919).
		if got["loss"] == want["loss"] && got["grad_norm"] == want["grad_norm"] {
			t.Errorf("%s: --cuda-attention gemm gave tc1's loss and gradient norm bit for bit: did it run?", job)
		}
	}
	// --cuda-gemm cublaslt: the linear GEMMs through the stand-in
	// cuBLASLt, which computes the same bits as its cublasGemmEx, so the
	// same metrics and adapter bytes as tc1's run on cuBLAS; the backend's
	// name in the log says cuBLASLt was bound. So does the stream-ordered
	// mode on the deferred device (cublasLtMatmul and cublasGemmEx queued
	// with the launches). Without cuBLASLt the run stops (exit 1) naming
	// the library and what it tried.
	for _, job := range jobs {
		log := run("cuda", job, "--model", md16, "--out", out, "--run", job+"-cuda-bf16-lt", "--rank", "2", "--steps", "1", "--lr", "1e-3",
			"--dtype", "bfloat16", "--compute", "bf16", "--cuda-gemm", "cublaslt", input[job])
		if !strings.Contains(log, "cuBLASLt "+libs.BLASLt) {
			t.Errorf("%s --cuda-gemm cublaslt: the log does not name cuBLASLt %s:\n%s", job, libs.BLASLt, log)
		}
		sameRun(t, out, job+"-cuda-bf16-tc1", job+"-cuda-bf16-lt", "--cuda-gemm cublaslt")
		deferred = libs.Driver
		run("cuda", job, "--model", md16, "--out", out, "--run", job+"-cuda-bf16-lt-edges", "--rank", "2", "--steps", "1", "--lr", "1e-3",
			"--dtype", "bfloat16", "--compute", "bf16", "--cuda-gemm", "cublaslt", "--cuda-sync", "edges", input[job])
		deferred = ""
		sameRun(t, out, job+"-cuda-bf16-lt", job+"-cuda-bf16-lt-edges", "--cuda-gemm cublaslt --cuda-sync edges")
	}
	nowhere := filepath.Join(dir, "absent", "libcublasLt.so.13")
	libLt = nowhere
	log, err := exec1("cuda", "sft", "--model", md16, "--out", out, "--run", "sft-no-lt", "--rank", "2", "--steps", "1",
		"--dtype", "bfloat16", "--compute", "bf16", "--cuda-gemm", "cublaslt", chats)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("--cuda-gemm cublaslt without cuBLASLt: %v, want exit 1\n%s", err, log)
	}
	for _, says := range []string{"--cuda-gemm cublaslt", "no cuBLASLt library (tried " + nowhere + ")", "HONE_LIBCUBLASLT"} {
		if !strings.Contains(log, says) {
			t.Errorf("--cuda-gemm cublaslt without cuBLASLt: the output does not say %q:\n%s", says, log)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "sft-no-lt", "step-000001")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--cuda-gemm cublaslt without cuBLASLt wrote an adapter (stat: %v)", err)
	}
}

// sameRun checks that run got under out has the metrics and the adapter
// bytes of run want, bit for bit (what flag changed between them).
func sameRun(t *testing.T, out, want, got, flag string) {
	t.Helper()
	wm, gm := readMetrics(t, filepath.Join(out, want)), readMetrics(t, filepath.Join(out, got))
	for _, k := range []string{"loss", "entropy", "grad_norm"} {
		if gm[k] != wm[k] {
			t.Errorf("%s: metric %s %v, %v in %s", flag, k, gm[k], wm[k], want)
		}
	}
	step := "step-000001"
	w, err := os.ReadFile(filepath.Join(out, want, step, peft.WeightsName))
	if err != nil {
		t.Fatal(err)
	}
	g, err := os.ReadFile(filepath.Join(out, got, step, peft.WeightsName))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g, w) {
		t.Errorf("%s: the adapter of %s differs from that of %s", flag, got, want)
	}
}

// readMetrics reads the last line of the run's metrics.jsonl.
func readMetrics(t *testing.T, run string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(run, runfolder.MetricsName))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
		t.Fatalf("%s: %v", run, err)
	}
	return m
}

// readAdapter reads every tensor of the PEFT adapter in dir as float32.
func readAdapter(t *testing.T, dir string) map[string][]float32 {
	t.Helper()
	f, err := safetensors.OpenFile(filepath.Join(dir, peft.WeightsName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string][]float32{}
	for _, name := range f.Names() {
		v, err := f.Float32(name)
		if err != nil {
			t.Fatal(err)
		}
		m[name] = v
	}
	return m
}

package cmdcheck

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/testbin"
	"github.com/hone-rl/hone/format/peft"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/internal/gobuild"
)

// The environment of the device check (kernels/cuda/gpucheck/run.sh,
// step hone-cmds): HONE_CMDCHECK_DIR names a folder holding hone-train,
// hone-serve, model/ (hone-train init-model) and scored.parquet
// (WriteScored), HONE_CMDCHECK_OUT the folder the runs and logs go to.
// HONE_CMDCHECK_WRITE names the folder TestWriteInputs writes
// scored.parquet into (make gpu-check).
const (
	dirEnv   = "HONE_CMDCHECK_DIR"
	outEnv   = "HONE_CMDCHECK_OUT"
	writeEnv = "HONE_CMDCHECK_WRITE"
)

// TestCommandsOnDevice is the device check's hone-cmds step: the whole
// flow with --device cuda against --device cpu, float32 and bfloat16
// weights. It is skipped unless HONE_CMDCHECK_DIR and HONE_CMDCHECK_OUT
// are set.
func TestCommandsOnDevice(t *testing.T) {
	dir, out := os.Getenv(dirEnv), os.Getenv(outEnv)
	if dir == "" || out == "" {
		t.Skipf("the device check runs this: set %s (hone-train, hone-serve, model/, scored.parquet) and %s", dirEnv, outEnv)
	}
	f := &flow{train: filepath.Join(dir, "hone-train"), serve: filepath.Join(dir, "hone-serve"), model: filepath.Join(dir, "model"),
		scored: filepath.Join(dir, "scored.parquet"), out: out, device: "cuda", tag: "cuda", dtypes: []string{"float32", "bfloat16"}}
	f.check(t)
}

// TestWriteInputs writes scored.parquet into HONE_CMDCHECK_WRITE for the
// device check (make gpu-check); skipped when it is not set.
func TestWriteInputs(t *testing.T) {
	dir := os.Getenv(writeEnv)
	if dir == "" {
		t.Skipf("make gpu-check runs this: set %s", writeEnv)
	}
	if err := WriteScored(context.Background(), filepath.Join(dir, "scored.parquet"), 4); err != nil {
		t.Fatal(err)
	}
}

// built holds hone-train and hone-serve, built by binaries once per test
// binary (never on the device, which has no Go: only the tests that run
// here call it), and removed by TestMain.
var built struct {
	once sync.Once
	dir  string
	err  error
}

func binaries() (string, error) {
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "hone-cmdcheck-*")
		if built.err != nil {
			return
		}
		built.err = gobuild.Commands(context.Background(), built.dir, "../../hone-train", "../../hone-serve")
	})
	return built.dir, built.err
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// localFlow is a flow on this machine: the binaries built here, a tiny
// model made by hone-train init-model (hidden, layers) and the scored
// file, in a new temporary folder.
func localFlow(t *testing.T, device string, hidden, layers int, dtypes ...string) *flow {
	t.Helper()
	bin, err := binaries()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f := &flow{train: filepath.Join(bin, "hone-train"), serve: filepath.Join(bin, "hone-serve"), model: filepath.Join(dir, "model"),
		scored: filepath.Join(dir, "scored.parquet"), out: filepath.Join(dir, "out"), device: device, tag: device, dtypes: dtypes}
	if device == "cpu" {
		f.tag = "cpu-again"
	}
	if out, err := exec.Command(f.train, "init-model", "--family", "qwen3", "--hidden", fmt.Sprint(hidden), "--layers", fmt.Sprint(layers),
		"--heads", "4", "--kv-heads", "2", "--seed", "1", "-o", f.model).CombinedOutput(); err != nil {
		t.Fatalf("init-model: %v\n%s", err, out)
	}
	if err := WriteScored(context.Background(), f.scored, 4); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFlowOnCPU runs the whole flow with the CPU as the device under test:
// every comparison, the resume and the serve check (one server answering
// for both) pass, and report their lines.
func TestFlowOnCPU(t *testing.T) {
	f := localFlow(t, "cpu", 32, 2, "float32")
	f.check(t)
}

// TestCompareCatchesDifferences: runs that differ (another LoRA seed,
// another learning rate) fail the comparisons that equal runs pass.
func TestCompareCatchesDifferences(t *testing.T) {
	f := localFlow(t, "cpu", 32, 1, "float32")
	for _, d := range []string{"runs", "logs"} {
		if err := os.MkdirAll(filepath.Join(f.out, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	args := func(run string, extra ...string) []string {
		a := f.jobArgs("grpo", run, "float32", 2)
		return append(a, extra...)
	}
	f.hone(t, "a", "cpu", args("a")...)
	f.hone(t, "b", "cpu", args("b", "--threads", "1")...)
	f.hone(t, "seed", "cpu", args("seed", "--seed", "2")...)
	f.hone(t, "lr", "cpu", args("lr", "--lr", "3e-3")...)
	step := runfolder.StepName(2)
	at := func(run string) string { return filepath.Join(f.run(run), step) }
	if _, err := CompareAdapters(at("a"), at("b"), AdapterTol); err != nil {
		t.Errorf("equal runs: %v", err)
	}
	if _, err := CompareMetrics(f.run("a"), f.run("b"), MetricTol); err != nil {
		t.Errorf("equal runs: %v", err)
	}
	if err := SameMetrics(f.run("a"), f.run("a")); err != nil {
		t.Errorf("a run against itself: %v", err)
	}
	if rel, err := CompareAdapters(at("a"), at("seed"), AdapterTol); err == nil || !strings.Contains(err.Error(), "want ≤") {
		t.Errorf("another LoRA seed: %v (rel %g), want the adapters apart", err, rel)
	}
	if rel, err := CompareAdapters(at("a"), at("lr"), AdapterTol); err == nil {
		t.Errorf("another lr: adapters within %g (rel %g)", AdapterTol, rel)
	}
	if rel, err := CompareMetrics(f.run("a"), f.run("lr"), MetricTol); err == nil || !strings.Contains(err.Error(), "metrics row 2") {
		t.Errorf("another lr: %v (rel %g), want step 2's metrics apart", err, rel)
	}
	if err := SameMetrics(f.run("a"), f.run("lr")); err == nil {
		t.Error("another lr: metrics the same")
	}
	if err := SameFiles(at("a"), at("seed"), peft.WeightsName); err == nil {
		t.Error("another LoRA seed: the same adapter file")
	}
}

// TestCommandsEmulated runs the device check's flow with --device cuda on
// the emulating CUDA libraries (cudafake.BuildEmulatingLibs: the .cu
// kernels run on the CPU, one OS thread per CUDA thread) on a one-layer
// model (its --cuda-sync edges run on the driver's deferred mode): slow
// (minutes), so only with HONE_LONG_TESTS=1.
func TestCommandsEmulated(t *testing.T) {
	if os.Getenv("HONE_LONG_TESTS") == "" || testing.Short() {
		t.Skip("the flow on the emulated CUDA device takes minutes: run with HONE_LONG_TESTS=1")
	}
	libs := testbin.EmulatedCUDA(t, "../../../kernels/cuda")
	f := localFlow(t, "cuda", 64, 1, "float32", "bfloat16") // head dim 16: the tensor-core attentions run
	f.env = []string{"HONE_LIBCUDA=" + libs.Driver, "HONE_LIBCUBLAS=" + libs.BLAS}
	f.edgesEnv = []string{"HONE_FAKE_CUDA_DEFERRED=" + libs.Driver} // the edges run waits only where it must
	f.check(t)
}

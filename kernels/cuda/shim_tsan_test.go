package cuda_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/internal/ccache"
	"github.com/hone-rl/hone/kernels/kerneltest"
)

// The CPU shim's race detector (cpushim/cuda_cpu.h, under
// -fsanitize=thread): two CUDA threads' accesses to the same memory, one of
// them a write, that no barrier orders are reported, as compute-sanitizer
// --tool racecheck reports them on a GPU. The shim runs a block's threads
// in order on one OS thread, so a kernel missing a __syncthreads or a
// __syncwarp mostly computes the right values here; only the detector
// fails it.

// tsanOptions makes a harness that ThreadSanitizer reports a race in stop
// at the first report with exit status tsanExit (TSan's own default goes
// on and exits with 66 at the end).
const (
	tsanOptions = "TSAN_OPTIONS=halt_on_error=1 exitcode=66"
	tsanExit    = 66
)

// buildTSan compiles the harness main (a testdata/*.cc or a shimSubset)
// with -fsanitize=thread into a binary named name and returns its path.
// Without libtsan (g++ brings it on Debian, through libgcc-12-dev) the
// test is skipped, unless CI is set.
func buildTSan(t *testing.T, main, name string) string {
	t.Helper()
	cxx := shimCXX(t)
	readShimSources(t)
	bin := filepath.Join(t.TempDir(), name)
	err := compileTSan(cxx, main, bin)
	var missing noTSanError
	if errors.As(err, &missing) && os.Getenv("CI") == "" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// noTSanError is a compiler that cannot build an empty program with
// -fsanitize=thread: it has no ThreadSanitizer runtime.
type noTSanError struct{ err error }

func (e noTSanError) Error() string { return "no ThreadSanitizer runtime: " + e.err.Error() }

// compileTSan builds main as buildTSan does. Whether the runtime is there
// is asked of an empty program first: a failed build of main itself is an
// error (noTSanError only for the empty program's), since its message
// names the shim's __tsan_ calls and tsan headers when the TSan-only code
// of cuda_cpu.h is what does not compile.
func compileTSan(cxx, main, bin string) error {
	ctx := context.Background()
	probe := []string{"-fsanitize=thread", "-x", "c++", "-"}
	if _, err := ccache.Default().Compile(ctx, cxx, probe, "int main() { return 0; }\n", bin); err != nil {
		return noTSanError{fmt.Errorf("%s -fsanitize=thread: %w", cxx, err)}
	}
	// -g1: line tables, so that a report names the kernel's file and line.
	args := []string{"-std=c++17", "-O1", "-g1", "-fsanitize=thread", "-Wall", "-Werror", "-pthread", "-I", "cpushim", main}
	if _, err := ccache.Default().Compile(ctx, cxx, args, "", bin); err != nil {
		return fmt.Errorf("%s -fsanitize=thread %s: %w", cxx, main, err)
	}
	return nil
}

// A compile error in the shim's ThreadSanitizer-only code (or the
// harness's) fails the race detector's tests: it was taken for a missing
// runtime, since its message names __tsan_ functions, and skipped outside
// CI, so that a local run passed with the detector not built.
func TestTSanCompileErrorIsNotSkipped(t *testing.T) {
	t.Parallel()
	cxx := shimCXX(t)
	dir := t.TempDir()
	main := filepath.Join(dir, "main.cc")
	src := "#include <sanitizer/tsan_interface.h>\nint main() {\n#if defined(__SANITIZE_THREAD__)\n\t__tsan_no_such_call();\n#endif\n\treturn 0;\n}\n"
	if err := os.WriteFile(main, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	// The runtime, asked directly: with none the test has nothing to show.
	empty := exec.Command(cxx, "-fsanitize=thread", "-x", "c++", "-", "-o", filepath.Join(dir, "empty"))
	empty.Stdin = strings.NewReader("int main() { return 0; }\n")
	if out, err := empty.CombinedOutput(); err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("%s -fsanitize=thread: no ThreadSanitizer runtime: %v\n%s", cxx, err, out)
		}
		t.Fatalf("%s -fsanitize=thread: %v\n%s", cxx, err, out)
	}
	err := compileTSan(cxx, main, filepath.Join(dir, "bin"))
	var missing noTSanError
	if errors.As(err, &missing) || err == nil || !strings.Contains(err.Error(), "__tsan_no_such_call") {
		t.Fatalf("a harness that does not compile under -fsanitize=thread, with the runtime there: %v, want its compile error, not a missing runtime (a skip)", err)
	}
}

// runTSan runs shim_main's kernel under tsanOptions and returns its exit
// status, standard output and standard error.
func runTSan(t *testing.T, bin, kernel string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, kernel)
	cmd.Env = append(os.Environ(), tsanOptions)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("%s %s: %v\n%s", bin, kernel, err, stderr.String())
	return 0, "", ""
}

// TestShimRaceDetector: shim_kernels.cu's race kernels, each missing one
// barrier a GPU needs (a __syncthreads between warps, a __syncwarp between
// lanes, a barrier after the first one of a pair, a barrier that an
// atomicAdd does not stand for), are reported, naming the kernel's line;
// their twins with the barrier are not, and give the values a GPU gives.
// The shim's own kernels (shuffles, __shared__ and dynamic shared memory
// reused by the next block, atomicAdd against atomicAdd, wmma, mma.sync and
// ldmatrix, the failed launches of divergent barriers) compute what they
// compute without TSan, and are not reported: the shim's bookkeeping
// between fibers is hidden from it.
func TestShimRaceDetector(t *testing.T) {
	t.Parallel()
	bin := buildTSan(t, filepath.Join("testdata", "shim_main.cc"), "shim_main_tsan")
	const n = 64
	// The thread whose value thread th of the synced twin reads.
	twins := map[string]func(th int) int{
		"race_block":         func(th int) int { return map[bool]int{true: th - 32, false: th}[th >= 32] },
		"race_warp":          func(th int) int { return map[bool]int{true: th - 1, false: th}[th%32 > 0] },
		"race_after_barrier": func(th int) int { return th ^ 32 },
		"race_after_atomic":  func(th int) int { return map[bool]int{true: th - 1, false: th}[th > 0] },
		"race_after_shuffle": func(th int) int { return map[bool]int{true: th - 1, false: th}[th%32 > 0] },
	}
	report := regexp.MustCompile(`SUMMARY: ThreadSanitizer: data race testdata/shim_kernels\.cu:\d+ in race`) // raceBlock or race_block, as inlined
	for kernel, src := range twins {
		t.Run(kernel, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := runTSan(t, bin, kernel)
			if code != tsanExit || !strings.Contains(stderr, "WARNING: ThreadSanitizer: data race") || !report.MatchString(stderr) {
				t.Errorf("%s: exit status %d, want %d and a data race reported in the kernel; stderr:\n%s", kernel, code, tsanExit, stderr)
			}
			code, stdout, stderr := runTSan(t, bin, kernel+"_synced")
			if code != 0 {
				t.Fatalf("%s_synced: exit status %d, want 0; stderr:\n%s", kernel, code, stderr)
			}
			got := strings.Fields(stdout)
			if len(got) != 2*4*n {
				t.Fatalf("%s_synced: %d values, want %d", kernel, len(got), 2*4*n)
			}
			for b := range 2 {
				for th := range n {
					if g, want := got[b*4*n+th], b*1000+src(th); g != strconv.Itoa(want) {
						t.Errorf("%s_synced: block %d, thread %d read %s, want %d", kernel, b, th, g, want)
					}
				}
			}
		})
	}
	t.Run("the shim's own kernels", func(t *testing.T) {
		t.Parallel()
		t.Run("semantics", func(t *testing.T) { shimSemantics(t, bin) })
		t.Run("divergence", func(t *testing.T) { shimDivergence(t, bin) })
		t.Run("wmma", func(t *testing.T) { shimWMMA(t, bin) })
		t.Run("mma", func(t *testing.T) { shimMMA(t, bin) })
	})
}

// TestKernelsRaceFreeOnCPUShim runs Hone's kernels (kernels_main, every
// .cu) under the race detector on small shapes: the float32 and tensor-core
// attentions (attention.cu; attention_tc.cu, attention_fa2.cu and
// attention_mma.cu with its 64-key forward; attention_gemm.cu's), decode
// (attention_decode.cu), RMSNorm on several block sizes, logprob, softmax
// and entropy, linear, embedding and gated LoRA. (sumsquares.cu and
// sample.cu take double pointers, which kernels_main does not carry: they
// run on the shim only in the emulator, cudafake.) A race stops the harness, and
// the launch's panic carries ThreadSanitizer's report. Then a copy of
// rmsnorm.cu without the __syncthreads between rmsnorm_backward_dweight's
// partial sums and their reading must be reported: the harness of the
// real kernels is watched, not only shim_kernels.cu's.
func TestKernelsRaceFreeOnCPUShim(t *testing.T) {
	t.Parallel()
	h := newShimHarnessEnv(t, buildTSan(t, filepath.Join("testdata", "kernels_main.cc"), "kernels_tsan"), tsanOptions)
	// The groups of the kernels that share memory between threads (those
	// of adamw, elementwise, geglu, misc, rope and swiglu.cu share none).
	t.Run("conformance", func(t *testing.T) {
		kerneltest.RunOps(t, shimBackend{h: h}, "RMSNorm", "Embedding", "LogSoftmax", "Entropy", "Linear", "LinearBF16", "Logprob",
			"AttentionDecode", "AttentionDecodeBatch")
	})
	t.Run("RMSNorm blocks", func(t *testing.T) { rmsnormBlocks(t, h, [][3]int{{3, 70, 64}, {5, 33, 96}}) })
	t.Run("LogprobForward", func(t *testing.T) { logprobOnShim(t, h, [][4]int{{2, 8, 100, 16}, {4, 8, 33, 1}}) })
	t.Run("gated LoRA forward", func(t *testing.T) { gatedLoRAOnShim(t, h) })
	t.Run("gated LoRA backward", func(t *testing.T) { gatedLoRABackwardOnShim(t, h) })
	t.Run("attention", func(t *testing.T) {
		attentionAgainstRef(t, shimBackend{h: h}, []attnCase{{lens: []int{23, 17}, H: 2, KVH: 1, D: 40, W: 9}})
	})
	// D 16 (one 16-column block), 64 (several) with a window.
	tc := []attnCase{{lens: []int{21, 14}, H: 2, KVH: 1, D: 16}, {lens: []int{19}, H: 2, KVH: 1, D: 64, W: 7}}
	for name, b := range map[string]kernels.Backend{
		"tc":     shimTC{shimBackend: shimBackend{h: h}},
		"tc2":    shimTC{shimBackend: shimBackend{h: h}, tc2: true},
		"tc3":    shimTC{shimBackend: shimBackend{h: h}, tc3: true},
		"tc3k64": shimTC{shimBackend: shimBackend{h: h}, tc3: true, k64: true},
	} {
		t.Run(name, func(t *testing.T) { attentionTCAgainstRef(t, b, tc) })
	}
	t.Run("gemm", func(t *testing.T) {
		attentionTCAgainstRef(t, shimGEMM{shimTC: shimTC{shimBackend: shimBackend{h: h}}, t: t}, tc)
	})
	t.Run("a missing barrier in rmsnorm.cu", func(t *testing.T) { tsanMutantReported(t) })
}

// tsanMutantReported builds rmsnorm.cu without the barrier before
// rmsnorm_backward_dweight reads the other rows' partial sums, and wants
// its launch stopped by a report of the race at the read.
func tsanMutantReported(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"rmsnorm.cu", "bf16round.cuh", "common.cuh"} {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if f == "rmsnorm.cu" {
			const barrier = "partial[threadIdx.y][threadIdx.x] = s;\n\t__syncthreads();"
			if strings.Count(string(src), barrier) != 1 {
				t.Fatalf("rmsnorm.cu: %q is not there once: the mutant needs another place", barrier)
			}
			src = []byte(strings.Replace(string(src), barrier, "partial[threadIdx.y][threadIdx.x] = s;", 1))
		}
		if err := os.WriteFile(filepath.Join(dir, f), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	main := shimSubset(t, dir, "rmsnorm_mutant", filepath.Join(dir, "rmsnorm.cu"))
	h := newShimHarnessEnv(t, buildTSan(t, main, "rmsnorm_mutant"), tsanOptions)
	const N, C = 5, 40
	r := rand.New(rand.NewPCG(28, 13))
	dw, dout, rstd, inp := make([]float32, C), randn(r, N*C), randn(r, N), randn(r, N*C)
	err := h.run(cuda.Step{Kernel: "rmsnorm_backward_dweight", Grid: cuda.Dim3{X: (C + 31) / 32, Y: 1, Z: 1}, Block: cuda.Dim3{X: 32, Y: 8, Z: 1},
		Args: []any{dw, dout, rstd, inp, N, C}})
	if err == nil || !strings.Contains(err.Error(), "exit status 66") || !strings.Contains(err.Error(), "data race") ||
		!strings.Contains(err.Error(), "in rmsnorm_backward_dweight") {
		t.Fatalf("rmsnorm_backward_dweight without its barrier: %v, want the harness stopped by a data race report", err)
	}
	// The harness's cleanup must not fail the test for the process that
	// ThreadSanitizer ended: run stopped it already.
}

package cuda_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels/cuda/internal/ccache"
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
	// -g1: line tables, so that a report names the kernel's file and line.
	args := []string{"-std=c++17", "-O1", "-g1", "-fsanitize=thread", "-Wall", "-Werror", "-pthread", "-I", "cpushim", main}
	if _, err := ccache.Default().Compile(context.Background(), cxx, args, "", bin); err != nil {
		if strings.Contains(err.Error(), "tsan") && os.Getenv("CI") == "" {
			t.Skipf("%s -fsanitize=thread: no ThreadSanitizer runtime: %v", cxx, err)
		}
		t.Fatalf("%s -fsanitize=thread %s: %v", cxx, main, err)
	}
	return bin
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

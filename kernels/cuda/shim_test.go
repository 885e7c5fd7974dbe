package cuda_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
)

// buildShim compiles a test harness (testdata/NAME.cc, which includes
// cpushim/cuda_cpu.h and kernel sources) with g++ and returns the binary.
// Without a C++ compiler the test is skipped, unless CI is set.
func buildShim(t *testing.T, name string) string {
	t.Helper()
	cxx := os.Getenv("CXX")
	if cxx == "" {
		cxx = "g++"
	}
	if _, err := exec.LookPath(cxx); err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("no C++ compiler for the CUDA CPU shim: %v", err)
		}
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), name)
	out, err := exec.Command(cxx, "-std=c++17", "-O0", "-Wall", "-Werror", "-pthread", "-I", "cpushim",
		"-o", bin, filepath.Join("testdata", name+".cc")).CombinedOutput()
	if err != nil {
		t.Fatalf("%s testdata/%s.cc: %v\n%s", cxx, name, err, out)
	}
	return bin
}

// TestRMSNormOnCPUShim runs rmsnorm.cu — the CUDA source, compiled by g++
// through cpushim/cuda_cpu.h — against kernels/ref's RMSNormForward on edge
// shapes and block sizes (one warp, several, a partial last column stride).
func TestRMSNormOnCPUShim(t *testing.T) {
	t.Parallel() // most of the time is the compiler's
	bin := buildShim(t, "rmsnorm_main")
	r := rand.New(rand.NewPCG(28, 4))
	for _, s := range [][3]int{{1, 1, 32}, {3, 70, 64}, {5, 33, 96}, {2, 17, 32}, {5, 896, 256}, {1, 1000, 1024}} {
		N, C, threads := s[0], s[1], s[2]
		t.Run(fmt.Sprintf("N=%d,C=%d,threads=%d", N, C, threads), func(t *testing.T) {
			inp, weight := randn(r, N*C), randn(r, C)
			const eps = 1e-6
			var in bytes.Buffer
			for _, v := range []any{[]int32{int32(N), int32(C), int32(threads)}, float32(eps), inp, weight} {
				if err := binary.Write(&in, binary.LittleEndian, v); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(bin)
			cmd.Stdin = &in
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			raw, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v: %s", err, stderr.String())
			}
			got := make([]float32, N*C+N)
			if err := binary.Read(bytes.NewReader(raw), binary.LittleEndian, got); err != nil {
				t.Fatalf("reading %d bytes: %v", len(raw), err)
			}
			out, rstd := make([]float32, N*C), make([]float32, N)
			ref.New().RMSNormForward(out, rstd, inp, weight, N, C, eps)
			near(t, "out", got[:N*C], out, kerneltest.F32Tol)
			near(t, "rstd", got[N*C:], rstd, kerneltest.F32Tol)
		})
	}
}

// runShimKernel runs one kernel of testdata/shim_kernels.cu on 2 blocks of
// 64 threads; it returns the outputs, or the launch's error message.
func runShimKernel(t *testing.T, bin, kernel string) ([]float64, string) {
	t.Helper()
	cmd := exec.Command(bin, kernel)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 {
		return nil, stderr.String()
	}
	if err != nil {
		t.Fatalf("%s: %v: %s", kernel, err, stderr.String())
	}
	var vals []float64
	for _, f := range strings.Fields(string(out)) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatal(err)
		}
		vals = append(vals, v)
	}
	return vals, ""
}

// TestShim checks the shim on the kernels of testdata/shim_kernels.cu.
func TestShim(t *testing.T) {
	t.Parallel()
	bin := buildShim(t, "shim_main")
	t.Run("semantics", func(t *testing.T) { shimSemantics(t, bin) })
	t.Run("divergence", func(t *testing.T) { shimDivergence(t, bin) })
}

// shimSemantics: the shim's warp shuffles (down, up, xor, and indexed
// within 16-lane segments) return CUDA's lanes, out-of-range sources keep
// their own value, and __shared__ memory is per block.
func shimSemantics(t *testing.T, bin string) {
	const n = 64
	check := func(kernel string, want func(b, part, t int) (float64, bool)) {
		got, msg := runShimKernel(t, bin, kernel)
		if msg != "" {
			t.Fatalf("%s: %s", kernel, msg)
		}
		for b := range 2 {
			for part := range 4 {
				for th := range n {
					w, ok := want(b, part, th)
					if g := got[(b*4+part)*n+th]; ok && g != w {
						t.Errorf("%s: block %d, output %d, thread %d: %g, want %g", kernel, b, part, th, g, w)
					}
				}
			}
		}
	}
	check("shuffles", func(b, part, th int) (float64, bool) {
		lane, base := th%32, th/32*32
		src := th
		switch part {
		case 0: // down 3
			if lane+3 < 32 {
				src = th + 3
			}
		case 1: // up 2
			if lane >= 2 {
				src = th - 2
			}
		case 2: // xor 5
			src = base + (lane ^ 5)
		case 3: // lane 7 of each 16-lane segment
			src = base + lane/16*16 + 7
		}
		return float64(b*1000 + src), true
	})
	check("shared_per_block", func(b, part, th int) (float64, bool) {
		return float64(b*1000 + n - 1 - th), part == 0
	})
}

// shimDivergence: a barrier or shuffle that only part of the block or warp
// reaches, or that threads reach at two places, stops the launch with a
// message naming the place, instead of a wrong result.
func shimDivergence(t *testing.T, bin string) {
	for kernel, says := range map[string][]string{
		"barrier_in_branch":    {"divergent", "testdata/shim_kernels.cu:25"},
		"barrier_two_places":   {"divergent __syncthreads", "testdata/shim_kernels.cu:31", "testdata/shim_kernels.cu:33"},
		"shuffle_in_branch":    {"divergent", "shuffle at testdata/shim_kernels.cu:40"},
		"shuffle_then_barrier": {"divergent barriers: no thread can go on", "shuffle at testdata/shim_kernels.cu:46", "__syncthreads at testdata/shim_kernels.cu:47"},
	} {
		_, msg := runShimKernel(t, bin, kernel)
		if msg == "" {
			t.Errorf("%s ran without error", kernel)
		}
		for _, s := range says {
			if !strings.Contains(msg, s) {
				t.Errorf("%s: message %q does not say %q", kernel, msg, s)
			}
		}
	}
}

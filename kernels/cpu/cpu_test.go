package cpu_test

import (
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/kernels/kerneltest"
)

// TestConformance runs the shared suite on every GEMM this build offers,
// once with the default parallel threshold and once with every op split
// among workers, so both code paths of each op are checked against ref.
func TestConformance(t *testing.T) {
	for _, gemm := range gemms() {
		for _, minPar := range []int{0, 1} {
			name := "gemm=" + gemm
			if minPar == 1 {
				name += ",parallel"
			}
			t.Run(name, func(t *testing.T) {
				b, err := cpu.New(cpu.Options{GEMM: gemm, MinParallel: minPar, Workers: 3, LogprobRows: 4})
				if err != nil {
					t.Fatal(err)
				}
				defer b.Close()
				kerneltest.Run(t, b)
			})
		}
	}
}

func TestGolden(t *testing.T) {
	for _, gemm := range gemms() {
		t.Run("gemm="+gemm, func(t *testing.T) {
			b, err := cpu.New(cpu.Options{GEMM: gemm})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			kerneltest.RunGolden(t, b, "../../testdata/golden/kernels")
		})
	}
}

// TestConcurrentUse calls one backend from several goroutines at once (the
// pool is shared, parts that cannot be queued run inline) and checks every
// goroutine gets the sequential result.
func TestConcurrentUse(t *testing.T) {
	b, err := cpu.New(cpu.Options{MinParallel: 1, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const N, C, OC = 9, 16, 24
	inp, w := make([]float32, N*C), make([]float32, OC*C)
	for i := range inp {
		inp[i] = float32(i%7) - 3
	}
	for i := range w {
		w[i] = float32(i%5) * 0.25
	}
	want := make([]float32, N*OC)
	b.LinearForward(want, inp, w, nil, N, C, OC)
	wantS := make([]float32, N*OC)
	b.SwiGLUForward(wantS, want, want, N*OC)

	errs := make(chan string, 8)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, s := make([]float32, N*OC), make([]float32, N*OC)
			for rep := 0; rep < 20; rep++ {
				b.LinearForward(out, inp, w, nil, N, C, OC)
				b.SwiGLUForward(s, out, out, N*OC)
				for i := range out {
					if out[i] != want[i] || s[i] != wantS[i] {
						errs <- fmt.Sprintf("value %d differs: %g/%g, want %g/%g", i, out[i], s[i], want[i], wantS[i])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// SpareProc leaves GOMAXPROCS one above the workers it returns, and does not
// lower a GOMAXPROCS that is already higher.
func TestSpareProc(t *testing.T) {
	old := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(old) })

	runtime.GOMAXPROCS(2)
	if w := cpu.SpareProc(0); w != 2 || runtime.GOMAXPROCS(0) != 3 {
		t.Errorf("SpareProc(0) at GOMAXPROCS 2: workers %d, GOMAXPROCS %d; want 2 and 3", w, runtime.GOMAXPROCS(0))
	}
	runtime.GOMAXPROCS(2)
	if w := cpu.SpareProc(4); w != 4 || runtime.GOMAXPROCS(0) != 5 {
		t.Errorf("SpareProc(4) at GOMAXPROCS 2: workers %d, GOMAXPROCS %d; want 4 and 5", w, runtime.GOMAXPROCS(0))
	}
	runtime.GOMAXPROCS(8)
	if w := cpu.SpareProc(2); w != 2 || runtime.GOMAXPROCS(0) != 8 {
		t.Errorf("SpareProc(2) at GOMAXPROCS 8: workers %d, GOMAXPROCS %d; want 2 and 8", w, runtime.GOMAXPROCS(0))
	}
}

// bf16Kernels are the bfloat16 GEMM micro-kernels this CPU can run: the
// portable one always (under cgo), the AVX512-BF16 and AMX ones where the
// CPU has them (each not run is logged, with why).
func bf16Kernels(t *testing.T) []string {
	k := []string{"portable"}
	for _, name := range []string{"avx512bf16", "amx"} {
		if b, err := cpu.New(cpu.Options{Compute: kernels.PrecisionBF16, BF16Kernel: name}); err == nil {
			b.Close()
			k = append(k, name)
		} else {
			t.Logf("bfloat16 kernel %s not checked: %v", name, err)
		}
	}
	return k
}

// TestConformanceBF16 runs the suite on the bf16 compute mode: the ops on
// bfloat16 weights against ref on the same rounded activations (F32Tol) and
// against float32 (kernels.BF16ComputeTol); every other op as in f32.
func TestConformanceBF16(t *testing.T) {
	if !cgoBuild {
		t.Skip("the bfloat16 GEMM is C; this test binary was built with CGO_ENABLED=0")
	}
	for _, k := range bf16Kernels(t) {
		for _, minPar := range []int{0, 1} {
			t.Run(fmt.Sprintf("kernel=%q,minParallel=%d", k, minPar), func(t *testing.T) {
				b, err := cpu.New(cpu.Options{Compute: kernels.PrecisionBF16, BF16Kernel: k, MinParallel: minPar, Workers: 3, LogprobRows: 4})
				if err != nil {
					t.Fatal(err)
				}
				defer b.Close()
				if kernels.PrecisionOf(b) != kernels.PrecisionBF16 {
					t.Fatalf("%s reports precision %v", b.Name(), kernels.PrecisionOf(b))
				}
				kerneltest.Run(t, b)
			})
		}
	}
}

package cpu_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/kernels/kerneltest"
)

// TestConformanceSplitGEMM runs the shared suite with every GEMM split into
// blocks on the workers (Options.SplitGEMM) and attention spread over
// sequences and kv heads, whatever OPENBLAS_NUM_THREADS says.
func TestConformanceSplitGEMM(t *testing.T) {
	for _, gemm := range gemms() {
		t.Run("gemm="+gemm, func(t *testing.T) {
			b, err := cpu.New(cpu.Options{GEMM: gemm, MinParallel: 1, Workers: 3, LogprobRows: 4, SplitGEMM: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			kerneltest.Run(t, b)
		})
	}
}

// TestSplitGEMMTransposes checks a split Matmul against an unsplit one on
// shapes taller and wider than the split threshold, in all four transpose
// combinations and with accumulation (beta = 1).
func TestSplitGEMMTransposes(t *testing.T) {
	split, err := cpu.New(cpu.Options{SplitGEMM: 1, Workers: 3, MinParallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer split.Close()
	whole, err := cpu.New(cpu.Options{SplitGEMM: -1, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Close()
	r := rand.New(rand.NewPCG(3, 4))
	for _, sh := range [][3]int{{97, 33, 21}, {33, 97, 21}, {64, 64, 1}, {17, 200, 5}} {
		M, N, K := sh[0], sh[1], sh[2]
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				t.Run(fmt.Sprintf("%dx%dx%d,tA=%v,tB=%v", M, N, K, tA, tB), func(t *testing.T) {
					a, bb := make([]float32, M*K), make([]float32, K*N)
					for i := range a {
						a[i] = float32(r.NormFloat64())
					}
					for i := range bb {
						bb[i] = float32(r.NormFloat64())
					}
					got, want := make([]float32, M*N), make([]float32, M*N)
					for i := range got {
						got[i] = float32(i % 5)
						want[i] = got[i]
					}
					split.Matmul(got, a, bb, M, N, K, tA, tB, 1)
					whole.Matmul(want, a, bb, M, N, K, tA, tB, 1)
					for i := range want {
						if math.Abs(float64(got[i]-want[i])) > 1e-5*(1+math.Abs(float64(want[i]))) {
							t.Fatalf("c[%d] = %g, want %g", i, got[i], want[i])
						}
					}
				})
			}
		}
	}
}

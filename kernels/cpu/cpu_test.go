package cpu_test

import (
	"testing"

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

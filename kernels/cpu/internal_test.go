package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hone-rl/hone/kernels"
)

func TestExp32(t *testing.T) {
	worst := 0.0
	for i := 0; i <= 200000; i++ {
		x := -87 * float64(i) / 200000
		got, want := float64(exp32(float32(x))), math.Exp(float64(float32(x)))
		if e := math.Abs(got-want) / want; e > worst {
			worst = e
		}
	}
	if worst > 3e-7 {
		t.Errorf("exp32: worst relative error %g over [-87, 0]", worst)
	}
	if exp32(0) != 1 {
		t.Errorf("exp32(0) = %g", exp32(0))
	}
	if exp32(-100) != 0 || exp32(float32(math.Inf(-1))) != 0 {
		t.Errorf("exp32 below -87 must be 0")
	}
}

// TestGemv checks the kernels the build uses (C with AVX2 under cgo)
// against its plain-Go statement on lengths around the vector widths.
func TestGemv(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, C := range []int{0, 1, 7, 8, 9, 15, 16, 17, 33, 896} {
		t.Run(fmt.Sprintf("C=%d", C), func(t *testing.T) {
			rows := 5
			x := make([]float32, C)
			w := make([]uint16, rows*C)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			for i := range w {
				w[i] = kernels.BF16(float32(r.NormFloat64()))
			}
			got, want := make([]float32, rows), make([]float32, rows)
			for i := range got {
				got[i] = float32(math.NaN())
			}
			bf16Gemv(got, x, w, C)
			bf16GemvGo(want, x, w, C)
			for i := range want {
				if math.Abs(float64(got[i]-want[i])) > 1e-5*(1+math.Abs(float64(want[i]))) {
					t.Errorf("bf16 row %d: got %g, want %g", i, got[i], want[i])
				}
			}
			wf := make([]float32, len(w))
			kernels.FromBF16(wf, w)
			for i := range got {
				got[i] = float32(math.NaN())
			}
			f32Gemv(got, x, wf, C)
			f32GemvGo(want, x, wf, C)
			for i := range want {
				if math.Abs(float64(got[i]-want[i])) > 1e-5*(1+math.Abs(float64(want[i]))) {
					t.Errorf("f32 row %d: got %g, want %g", i, got[i], want[i])
				}
			}
		})
	}
}

func TestOptions(t *testing.T) {
	if _, err := New(Options{GEMM: "mkl"}); err == nil {
		t.Error("unknown GEMM accepted")
	}
	b, err := New(Options{GEMM: "gonum"})
	if err != nil {
		t.Fatal(err)
	}
	if b.Name() != "cpu/gonum" {
		t.Errorf("Name() = %q", b.Name())
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil { // twice is harmless
		t.Fatal(err)
	}
}

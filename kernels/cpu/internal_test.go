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
			detect().bf16Gemv(got, x, w, C)
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
			detect().f32Gemv(got, x, wf, C, C)
			f32GemvGo(want, x, wf, C, C)
			for i := range want {
				if math.Abs(float64(got[i]-want[i])) > 1e-5*(1+math.Abs(float64(want[i]))) {
					t.Errorf("f32 row %d: got %g, want %g", i, got[i], want[i])
				}
			}
		})
	}
}

func TestGemvStrided(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	for _, sh := range [][3]int{{1, 1, 1}, {3, 8, 24}, {17, 64, 128}, {5, 13, 40}} {
		rows, cols, ld := sh[0], sh[1], sh[2]
		t.Run(fmt.Sprintf("rows=%d,cols=%d,ld=%d", rows, cols, ld), func(t *testing.T) {
			w := make([]float32, (rows-1)*ld+cols)
			x, p := make([]float32, cols), make([]float32, rows)
			for _, s := range [][]float32{w, x, p} {
				for i := range s {
					s[i] = float32(r.NormFloat64())
				}
			}
			got, want := make([]float32, rows), make([]float32, rows)
			detect().f32Gemv(got, x, w, cols, ld)
			f32GemvGo(want, x, w, cols, ld)
			for i := range want {
				if math.Abs(float64(got[i]-want[i])) > 1e-5*(1+math.Abs(float64(want[i]))) {
					t.Errorf("gemv row %d: got %g, want %g", i, got[i], want[i])
				}
			}
			gotT, wantT := make([]float32, cols), make([]float32, cols)
			for i := range gotT {
				gotT[i] = float32(math.NaN())
			}
			detect().f32GemvT(gotT, p, w, ld)
			f32GemvTGo(wantT, p, w, ld)
			for i := range wantT {
				if math.Abs(float64(gotT[i]-wantT[i])) > 1e-5*(1+math.Abs(float64(wantT[i]))) {
					t.Errorf("gemvT col %d: got %g, want %g", i, gotT[i], wantT[i])
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

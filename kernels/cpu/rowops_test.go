package cpu

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRowOps checks RowMax and ExpShift (the AVX-512 code where this CPU
// has it) and the Go loop against float64 math, over lengths around the
// 16-lane width and a full Qwen vocabulary, in place, not, and without dst.
func TestRowOps(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	b, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if m := b.RowMax(nil); !math.IsInf(float64(m), -1) {
		t.Fatalf("RowMax(nil) = %g, want -Inf", m)
	}
	if s := b.ExpShift(nil, nil, 0, 1); s != 0 {
		t.Fatalf("ExpShift of nothing = %g", s)
	}
	for _, n := range []int{1, 15, 16, 17, 33, 1000, 151936} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(8 * r.NormFloat64())
		}
		x[r.IntN(n)] = float32(math.Inf(-1)) // a masked token
		want := float32(math.Inf(-1))
		for _, v := range x {
			want = max(want, v)
		}
		if got := b.RowMax(x); got != want {
			t.Fatalf("n=%d: RowMax = %g, want %g", n, got, want)
		}
		for _, scale := range []float32{1, 1 / 0.7, 0.05} {
			var sum float64
			ref := make([]float64, n)
			for i, v := range x {
				a := float64((v - want) * scale) // the float32 argument both implementations form
				if a >= -87 {
					ref[i] = math.Exp(a)
				}
				sum += ref[i]
			}
			for _, impl := range []struct {
				name string
				f    func(dst, x []float32, mu, scale float32) float64
			}{{"ExpShift", b.ExpShift}, {"expShiftGo", expShiftGo}} {
				for _, inPlace := range []bool{false, true} {
					src := append([]float32(nil), x...)
					dst := make([]float32, n+3) // longer is fine
					if inPlace {
						dst = src
					}
					s := impl.f(dst, src, want, scale)
					if math.Abs(s-sum) > 1e-6*sum {
						t.Fatalf("n=%d scale=%g %s in-place=%v: sum %.9g, want %.9g", n, scale, impl.name, inPlace, s, sum)
					}
					for i, e := range ref {
						if math.Abs(float64(dst[i])-e) > 5e-7*e {
							t.Fatalf("n=%d scale=%g %s in-place=%v: [%d] = %g, want %g", n, scale, impl.name, inPlace, i, dst[i], e)
						}
					}
					if !inPlace && (dst[n] != 0 || dst[n+2] != 0) {
						t.Fatalf("n=%d %s wrote past len(x)", n, impl.name)
					}
				}
				// No dst: the same sum, bit for bit (NaN when x is all −Inf, n
				// = 1), and x untouched.
				src := append([]float32(nil), x...)
				s, full := impl.f(nil, src, want, scale), impl.f(make([]float32, n), x, want, scale)
				if s != full && !(math.IsNaN(s) && math.IsNaN(full)) {
					t.Fatalf("n=%d scale=%g %s: sum without dst %.9g, with dst %.9g", n, scale, impl.name, s, full)
				}
				if !slices.Equal(src, x) {
					t.Fatalf("n=%d %s without dst changed x", n, impl.name)
				}
			}
		}
	}
}

func BenchmarkExpShift(b *testing.B) {
	be, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	x := make([]float32, 151936)
	r := rand.New(rand.NewPCG(1, 1))
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	m := be.RowMax(x)
	dst := make([]float32, len(x))
	b.Run("exported", func(b *testing.B) {
		for range b.N {
			be.ExpShift(dst, x, m, 1)
		}
	})
	b.Run("go", func(b *testing.B) {
		for range b.N {
			expShiftGo(dst, x, m, 1)
		}
	})
}

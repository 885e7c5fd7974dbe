package cuda_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/cudafake"
	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
)

// openFake opens device 0 of a fresh fake driver and cuBLAS.
func openFake(t *testing.T, memLimit int) (*cuda.Device, *cudafake.Driver, *cudafake.BLAS) {
	t.Helper()
	drv := cudafake.NewDriver(1, memLimit)
	blas := cudafake.NewBLAS(drv)
	dev, err := cuda.OpenWith(drv, blas, 0)
	if err != nil {
		t.Fatal(err)
	}
	return dev, drv, blas
}

// openFakeOps is openFake with the device's Ops loaded: the set-up of the
// tests that call Ops' methods on the fake driver, which records their
// launches and GEMMs and runs no kernel. The Ops are unloaded, then the
// device closed, when t ends.
func openFakeOps(t *testing.T) (*cuda.Device, *cuda.Ops, *cudafake.Driver, *cudafake.BLAS) {
	t.Helper()
	dev, drv, blas := openFake(t, 0)
	t.Cleanup(func() { dev.Close() })
	o, err := dev.LoadOps()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Unload() })
	return dev, o, drv, blas
}

// deviceAlloc returns an allocator of n float32 values on dev that fails t
// where dev cannot allocate them.
func deviceAlloc(t *testing.T, dev *cuda.Device) func(n int) *cuda.Buffer {
	return func(n int) *cuda.Buffer {
		t.Helper()
		return allocOrFail(t, dev.Alloc, n)
	}
}

func randn(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

// near fails t unless got matches want within tol·(|want| + rms(want)),
// kerneltest's rule.
func near(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	var ss float64
	for _, w := range want {
		ss += float64(w) * float64(w)
	}
	rms := math.Sqrt(ss / math.Max(1, float64(len(want))))
	for i := range want {
		if e := math.Abs(float64(got[i]) - float64(want[i])); !(e <= tol*(math.Abs(float64(want[i]))+rms+1e-30)) {
			t.Fatalf("%s: [%d] = %g, want %g", what, i, got[i], want[i])
		}
	}
}

// upload allocates a device buffer holding x.
func upload(t *testing.T, dev *cuda.Device, x []float32) *cuda.Buffer {
	t.Helper()
	b, err := dev.Alloc(len(x))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Upload(x); err != nil {
		t.Fatal(err)
	}
	return b
}

func download(t *testing.T, b *cuda.Buffer) []float32 {
	t.Helper()
	x := make([]float32, b.Len())
	if err := b.Download(x); err != nil {
		t.Fatal(err)
	}
	return x
}

func op(trans bool) cuda.Op {
	if trans {
		return cuda.OpT
	}
	return cuda.OpN
}

// TestMatmulTransposedCall: Matmul and MatmulBatched of row-major matrices,
// run as cuBLAS's column-major call by the fake (which computes that call
// from the BLAS definition and checks its leading dimensions and memory
// spans), equal kernels/ref's row-major Matmul on edge shapes, every
// transpose and beta 0 (c starts NaN: it must be ignored) or not; and the
// call is the transposed one: sizes M and N swapped, b first.
func TestMatmulTransposedCall(t *testing.T) {
	dev, drv, blas := openFake(t, 0)
	defer dev.Close()
	r := rand.New(rand.NewPCG(28, 1))
	for _, s := range [][3]int{{1, 1, 1}, {2, 3, 5}, {17, 5, 3}, {3, 17, 1}, {1, 7, 9}, {8, 8, 8}} {
		M, N, K := s[0], s[1], s[2]
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			for _, beta := range []float32{0, 0.5} {
				for _, batch := range []int{1, 3} {
					name := fmt.Sprintf("batch=%d,M=%d,N=%d,K=%d,transA=%v,transB=%v,beta=%g", batch, M, N, K, tr[0], tr[1], beta)
					a, b, c := randn(r, batch*M*K), randn(r, batch*K*N), randn(r, batch*M*N)
					if beta == 0 {
						for i := range c {
							c[i] = float32(math.NaN())
						}
					}
					want := append([]float32(nil), c...)
					ref.New().MatmulBatched(want, a, b, batch, M, N, K, tr[0], tr[1], beta)
					da, db, dc := upload(t, dev, a), upload(t, dev, b), upload(t, dev, c)
					var err error
					if batch == 1 {
						err = dev.Matmul(dc, da, db, M, N, K, tr[0], tr[1], beta)
					} else {
						err = dev.MatmulBatched(dc, da, db, batch, M, N, K, tr[0], tr[1], beta)
					}
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					near(t, name, download(t, dc), want, kerneltest.F32Tol)
					g := blas.Gemms()[len(blas.Gemms())-1]
					if g.M != N || g.N != M || g.K != K || g.LDC != N || g.TransA != op(tr[1]) || g.TransB != op(tr[0]) || g.Batch != batch {
						t.Errorf("%s: cuBLAS called with %+v, want the transposed call", name, g)
					}
					for _, x := range []*cuda.Buffer{da, db, dc} {
						if err := x.Free(); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
		}
	}
	if n, _ := drv.Live(); n != 0 {
		t.Errorf("%d allocations left on the fake device", n)
	}
}

// TestMatmulWrongMappingCaught: the fake tells a wrong mapping from the
// right one, so that TestMatmulTransposedCall can fail. Each single change
// to the call Matmul makes (an operation flipped, M and N unswapped, the
// operands unswapped, a leading dimension off by one) is refused by the
// fake or gives a product other than ref's.
func TestMatmulWrongMappingCaught(t *testing.T) {
	dev, drv, blas := openFake(t, 0)
	defer dev.Close()
	M, N, K := 3, 5, 4
	r := rand.New(rand.NewPCG(28, 2))
	a, b := randn(r, M*K), randn(r, N*K) // b stored [N,K]: transB
	want := make([]float32, M*N)
	ref.New().Matmul(want, a, b, M, N, K, false, true, 0)
	da, db, dc := upload(t, dev, a), upload(t, dev, b), upload(t, dev, make([]float32, M*N))
	if err := dev.Matmul(dc, da, db, M, N, K, false, true, 0); err != nil {
		t.Fatal(err)
	}
	near(t, "right mapping", download(t, dc), want, kerneltest.F32Tol)
	good := blas.Gemms()[0]
	h, err := blas.Create()
	if err != nil {
		t.Fatal(err)
	}
	defer blas.Destroy(h)
	flip := func(o cuda.Op) cuda.Op { return 1 - o }
	for _, m := range []struct {
		name string
		edit func(g *cuda.Gemm)
	}{
		{"op(A) flipped", func(g *cuda.Gemm) { g.TransA = flip(g.TransA) }},
		{"op(B) flipped", func(g *cuda.Gemm) { g.TransB = flip(g.TransB) }},
		{"M and N unswapped", func(g *cuda.Gemm) { g.M, g.N, g.LDC = g.N, g.M, g.N }},
		{"operands unswapped", func(g *cuda.Gemm) {
			g.A, g.B, g.LDA, g.LDB, g.TransA, g.TransB = g.B, g.A, g.LDB, g.LDA, g.TransB, g.TransA
		}},
		{"lda+1", func(g *cuda.Gemm) { g.LDA++ }},
		{"ldb+1", func(g *cuda.Gemm) { g.LDB++ }},
	} {
		g := good
		m.edit(&g)
		if err := dc.Upload(make([]float32, M*N)); err != nil {
			t.Fatal(err)
		}
		if err := blas.Sgemm(h, g); err != nil {
			continue // refused: caught
		}
		got := readF32(t, drv, g.C, M*N)
		same := true
		for i := range got {
			same = same && math.Abs(float64(got[i]-want[i])) <= 1e-4*(1+math.Abs(float64(want[i])))
		}
		if same {
			t.Errorf("%s: the fake gave ref's product for a wrong call %+v", m.name, g)
		}
	}
	for _, x := range []*cuda.Buffer{da, db, dc} {
		if err := x.Free(); err != nil {
			t.Fatal(err)
		}
	}
}

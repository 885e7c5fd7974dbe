package cuda_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
)

// The *OnHardware tests run on a real CUDA device, against kernels/ref.
// They run only when HONE_CUDA_TEST=1 (CI and this repository's machines
// have no GPU): build the test binary here and run it there (`make
// gpu-check` does both halves),
//
//	go test -c -o cuda.test ./kernels/cuda
//	HONE_CUDA_TEST=1 ./cuda.test -test.run OnHardware -test.v
//
// with HONE_LIBCUDA / HONE_LIBCUBLAS when the libraries are not on the
// loader's path. They have not been run yet.

// openHardware opens device 0, or skips without HONE_CUDA_TEST=1.
func openHardware(t *testing.T) *cuda.Device {
	t.Helper()
	if os.Getenv("HONE_CUDA_TEST") != "1" {
		t.Skip("set HONE_CUDA_TEST=1 on a machine with a CUDA device")
	}
	dev, err := cuda.Open(cuda.Options{DriverLib: os.Getenv("HONE_LIBCUDA"), BLASLib: os.Getenv("HONE_LIBCUBLAS")})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("device: %s", dev)
	return dev
}

// hardwareBackend is openHardware's device 0 under a cuda.Backend in
// precision p, closed when t ends, after the test's own defers (a Close
// error fails t).
func hardwareBackend(t *testing.T, p kernels.Precision) *cuda.Backend {
	t.Helper()
	dev := openHardware(t)
	b, err := cuda.NewBackend(dev, p)
	if err != nil {
		dev.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	return b
}

// timePerCall is the mean time of 10 calls of f on b, from the device
// having finished what came before to its having finished the last.
func timePerCall(b *cuda.Backend, f func()) time.Duration {
	const reps = 10
	b.Synchronize()
	start := time.Now()
	for range reps {
		f()
	}
	b.Synchronize()
	return time.Since(start) / reps
}

// median returns the middle of ds (of a sorted copy).
func median(ds []time.Duration) time.Duration {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// TestOnHardware runs the GEMMs (cuBLAS, through the row-major mapping).
func TestOnHardware(t *testing.T) {
	dev := openHardware(t)
	var err error
	r := rand.New(rand.NewPCG(28, 5))
	for _, s := range [][4]int{{1, 1, 1, 1}, {1, 17, 5, 3}, {3, 33, 65, 129}, {2, 256, 896, 128}} {
		batch, M, N, K := s[0], s[1], s[2], s[3]
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			name := fmt.Sprintf("batch=%d,M=%d,N=%d,K=%d,transA=%v,transB=%v", batch, M, N, K, tr[0], tr[1])
			a, b, c := randn(r, batch*M*K), randn(r, batch*K*N), randn(r, batch*M*N)
			want := append([]float32(nil), c...)
			ref.New().MatmulBatched(want, a, b, batch, M, N, K, tr[0], tr[1], 0.5)
			da, db, dc := upload(t, dev, a), upload(t, dev, b), upload(t, dev, c)
			if batch == 1 {
				err = dev.Matmul(dc, da, db, M, N, K, tr[0], tr[1], 0.5)
			} else {
				err = dev.MatmulBatched(dc, da, db, batch, M, N, K, tr[0], tr[1], 0.5)
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			near(t, name, download(t, dc), want, kerneltest.F32Tol)
			for _, x := range []*cuda.Buffer{da, db, dc} {
				if err := x.Free(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRMSNormOnHardware runs rmsnorm.cu's embedded PTX (JIT-compiled by the
// driver) on edge shapes and block sizes, and the 0.5B and 7B hidden sizes.
func TestRMSNormOnHardware(t *testing.T) {
	dev := openHardware(t)
	mod, err := dev.LoadKernels("rmsnorm")
	if err != nil {
		t.Fatal(err)
	}
	k, err := mod.Kernel("rmsnorm_forward")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(28, 6))
	for _, s := range [][3]int{{1, 1, 32}, {3, 70, 64}, {5, 33, 96}, {2, 17, 32}, {5, 896, 256}, {1, 1000, 1024}, {64, 3584, 1024}} {
		N, C, threads := s[0], s[1], s[2]
		name := fmt.Sprintf("N=%d,C=%d,threads=%d", N, C, threads)
		const eps = 1e-6
		inp, weight := randn(r, N*C), randn(r, C)
		out, rstd := make([]float32, N*C), make([]float32, N)
		ref.New().RMSNormForward(out, rstd, inp, weight, N, C, eps)
		dIn, dW := upload(t, dev, inp), upload(t, dev, weight)
		dOut, dRstd := upload(t, dev, make([]float32, N*C)), upload(t, dev, make([]float32, N))
		if err := k.Launch(cuda.Dim3{X: N, Y: 1, Z: 1}, cuda.Dim3{X: threads, Y: 1, Z: 1}, 0, dOut, dRstd, dIn, dW, C, float32(eps)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		near(t, name+" out", download(t, dOut), out, kerneltest.F32Tol)
		near(t, name+" rstd", download(t, dRstd), rstd, kerneltest.F32Tol)
		for _, x := range []*cuda.Buffer{dIn, dW, dOut, dRstd} {
			if err := x.Free(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := mod.Unload(); err != nil {
		t.Fatal(err)
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
}

// deviceBackend is kernels/ref with the ops kernels/cuda has kernels for
// replaced by Ops on a device: each call uploads its operands, launches,
// and downloads every buffer back into its host slice. A failure panics
// (kernels.Backend returns no errors).
type deviceBackend struct {
	ref.Backend
	dev *cuda.Device
	ops *cuda.Ops
}

// call runs f with buf, which uploads a host slice to a fresh buffer (the
// same buffer for slices starting at the same element: in-place ops; nil
// for a nil slice, an operand left out; a one-element buffer, not copied,
// for an empty one), and ibuf, which uploads int32 operands; then it
// downloads buf's buffers back and frees every buffer made.
func (b deviceBackend) call(op string, f func(buf func(x []float32) *cuda.Buffer, ibuf func(x []int32) *cuda.Buffer) error) {
	type held struct {
		host []float32
		dev  *cuda.Buffer
	}
	var bufs []held
	defer func() {
		for _, h := range bufs {
			h.dev.Free()
		}
	}()
	var empties []*cuda.Buffer
	defer func() {
		for _, d := range empties {
			d.Free()
		}
	}()
	buf := func(x []float32) *cuda.Buffer {
		if x == nil {
			return nil // an operand left out
		}
		if len(x) == 0 { // n = 0: a buffer, with nothing to copy
			d, err := b.dev.Alloc(1)
			if err != nil {
				panic(err)
			}
			empties = append(empties, d)
			return d
		}
		for _, h := range bufs {
			if &h.host[0] == &x[0] {
				return h.dev
			}
		}
		d, err := b.dev.Alloc(len(x))
		if err != nil {
			panic(err)
		}
		bufs = append(bufs, held{x, d})
		if err := d.Upload(x); err != nil {
			panic(err)
		}
		return d
	}
	var ints []*cuda.Buffer
	defer func() {
		for _, d := range ints {
			d.Free()
		}
	}()
	ibuf := func(x []int32) *cuda.Buffer {
		if len(x) == 0 {
			return nil
		}
		d, err := b.dev.Alloc(len(x))
		if err != nil {
			panic(err)
		}
		ints = append(ints, d)
		if err := d.UploadInt32(x); err != nil {
			panic(err)
		}
		return d
	}
	if err := f(buf, ibuf); err != nil {
		panic(fmt.Sprintf("%s on the device: %v", op, err))
	}
	for _, h := range bufs {
		if err := h.dev.Download(h.host); err != nil {
			panic(err)
		}
	}
}

func (b deviceBackend) RMSNormForward(out, rstd, inp, weight []float32, N, C int, eps float32) {
	b.call("RMSNormForward", func(buf func([]float32) *cuda.Buffer, _ func([]int32) *cuda.Buffer) error {
		return b.ops.RMSNormForward(buf(out), buf(rstd), buf(inp), buf(weight), N, C, eps)
	})
}

func (b deviceBackend) RMSNormBackward(dinp, dweight, dout, rstd, inp, weight []float32, N, C int) {
	b.call("RMSNormBackward", func(buf func([]float32) *cuda.Buffer, _ func([]int32) *cuda.Buffer) error {
		return b.ops.RMSNormBackward(buf(dinp), buf(dweight), buf(dout), buf(rstd), buf(inp), buf(weight), N, C)
	})
}

func (b deviceBackend) RoPEForward(out, inp []float32, pos []int32, invFreq []float32, N, H, D int) {
	b.call("RoPEForward", func(buf func([]float32) *cuda.Buffer, ibuf func([]int32) *cuda.Buffer) error {
		return b.ops.RoPEForward(buf(out), buf(inp), ibuf(pos), buf(invFreq), N, H, D, len(invFreq))
	})
}

func (b deviceBackend) RoPEBackward(dinp, dout []float32, pos []int32, invFreq []float32, N, H, D int) {
	b.call("RoPEBackward", func(buf func([]float32) *cuda.Buffer, ibuf func([]int32) *cuda.Buffer) error {
		return b.ops.RoPEBackward(buf(dinp), buf(dout), ibuf(pos), buf(invFreq), N, H, D, len(invFreq))
	})
}

func (b deviceBackend) SwiGLUForward(out, gate, up []float32, n int) {
	b.call("SwiGLUForward", func(buf func([]float32) *cuda.Buffer, _ func([]int32) *cuda.Buffer) error {
		return b.ops.SwiGLUForward(buf(out), buf(gate), buf(up), n)
	})
}

func (b deviceBackend) SwiGLUBackward(dgate, dup, dout, gate, up []float32, n int) {
	b.call("SwiGLUBackward", func(buf func([]float32) *cuda.Buffer, _ func([]int32) *cuda.Buffer) error {
		return b.ops.SwiGLUBackward(buf(dgate), buf(dup), buf(dout), buf(gate), buf(up), n)
	})
}

func (b deviceBackend) EmbeddingForward(out []float32, ids []int32, table []float32, N, C, V int) {
	b.call("EmbeddingForward", func(buf func([]float32) *cuda.Buffer, ibuf func([]int32) *cuda.Buffer) error {
		return b.ops.EmbeddingForward(buf(out), ibuf(ids), buf(table), N, C, V)
	})
}

func (b deviceBackend) EmbeddingForwardBF16(out []float32, ids []int32, table []uint16, N, C, V int) {
	tb, err := b.dev.Alloc((len(table) + 1) / 2)
	if err != nil {
		panic(err)
	}
	defer tb.Free()
	if err := tb.UploadBF16(table); err != nil {
		panic(err)
	}
	b.call("EmbeddingForwardBF16", func(buf func([]float32) *cuda.Buffer, ibuf func([]int32) *cuda.Buffer) error {
		return b.ops.EmbeddingForwardBF16(buf(out), ibuf(ids), tb, N, C, V)
	})
}

func (b deviceBackend) EmbeddingBackward(dtable, dout []float32, ids []int32, N, C, V int) {
	b.call("EmbeddingBackward", func(buf func([]float32) *cuda.Buffer, ibuf func([]int32) *cuda.Buffer) error {
		return b.ops.EmbeddingBackward(buf(dtable), buf(dout), ibuf(ids), N, C, V)
	})
}

func (b deviceBackend) AdamW(param, grad, m, v []float32, n, step int, h kernels.AdamWParams) {
	b.call("AdamW", func(buf func([]float32) *cuda.Buffer, _ func([]int32) *cuda.Buffer) error {
		return b.ops.AdamW(buf(param), buf(grad), buf(m), buf(v), n, step, h)
	})
}

func (b deviceBackend) Add(out, x, y []float32, n int) {
	b.call("Add", func(buf func([]float32) *cuda.Buffer, _ func([]int32) *cuda.Buffer) error {
		return b.ops.Add(buf(out), buf(x), buf(y), n)
	})
}

func (b deviceBackend) Scale(out, x []float32, s float32, n int) {
	b.call("Scale", func(buf func([]float32) *cuda.Buffer, _ func([]int32) *cuda.Buffer) error {
		return b.ops.Scale(buf(out), buf(x), s, n)
	})
}

func (b deviceBackend) AXPY(out, x []float32, s float32, n int) {
	b.call("AXPY", func(buf func([]float32) *cuda.Buffer, _ func([]int32) *cuda.Buffer) error {
		return b.ops.AXPY(buf(out), buf(x), s, n)
	})
}

func (b deviceBackend) LogSoftmaxForward(out, inp []float32, N, V int) {
	b.call("LogSoftmaxForward", func(buf func([]float32) *cuda.Buffer, _ func([]int32) *cuda.Buffer) error {
		return b.ops.LogSoftmaxForward(buf(out), buf(inp), N, V)
	})
}

func (b deviceBackend) LogSoftmaxBackward(dinp, dout, out []float32, N, V int) {
	b.call("LogSoftmaxBackward", func(buf func([]float32) *cuda.Buffer, _ func([]int32) *cuda.Buffer) error {
		return b.ops.LogSoftmaxBackward(buf(dinp), buf(dout), buf(out), N, V)
	})
}

func (b deviceBackend) EntropyForward(ent, inp []float32, N, V int) {
	b.call("EntropyForward", func(buf func([]float32) *cuda.Buffer, _ func([]int32) *cuda.Buffer) error {
		return b.ops.EntropyForward(buf(ent), buf(inp), N, V)
	})
}

func (b deviceBackend) EntropyBackward(dinp, dent, inp []float32, N, V int) {
	b.call("EntropyBackward", func(buf func([]float32) *cuda.Buffer, _ func([]int32) *cuda.Buffer) error {
		return b.ops.EntropyBackward(buf(dinp), buf(dent), buf(inp), N, V)
	})
}

// TestKernelsOnHardware runs Ops (the .cu kernels' embedded PTX,
// JIT-compiled by the driver, with Ops' launch geometry) through
// kerneltest's conformance cases for their ops, against kernels/ref, and
// on the 7B shape's rows and Qwen's vocabulary; the attention ops
// (attentionOnHardware); LogprobForward with
// expect (cuBLAS GEMMs and logprob.cu) and LogprobBackwardExpect on the
// shim test's shapes.
func TestKernelsOnHardware(t *testing.T) {
	dev := openHardware(t)
	defer dev.Close()
	ops, err := dev.LoadOps()
	if err != nil {
		t.Fatal(err)
	}
	b := deviceBackend{dev: dev, ops: ops}
	kerneltest.RunOps(t, b, "RMSNorm", "RoPE", "SwiGLU", "Embedding", "AdamW", "Elementwise", "LogSoftmax", "Entropy")
	t.Run("attention", func(t *testing.T) { attentionOnHardware(t, b) })
	t.Run("7B rows", func(t *testing.T) {
		if testing.Short() {
			t.Skip("-test.short (run.sh's memcheck step): the small shapes only")
		}
		r := rand.New(rand.NewPCG(28, 7))
		const N, C = 64, 3584
		inp, weight, dout := randn(r, N*C), randn(r, C), randn(r, N*C)
		want, wantRstd, got, gotRstd := make([]float32, N*C), make([]float32, N), make([]float32, N*C), make([]float32, N)
		ref.New().RMSNormForward(want, wantRstd, inp, weight, N, C, 1e-6)
		b.RMSNormForward(got, gotRstd, inp, weight, N, C, 1e-6)
		near(t, "RMSNorm out", got, want, kerneltest.F32Tol)
		near(t, "RMSNorm rstd", gotRstd, wantRstd, kerneltest.F32Tol)
		wdi, wdw, gdi, gdw := make([]float32, N*C), make([]float32, C), make([]float32, N*C), make([]float32, C)
		ref.New().RMSNormBackward(wdi, wdw, dout, wantRstd, inp, weight, N, C)
		b.RMSNormBackward(gdi, gdw, dout, wantRstd, inp, weight, N, C)
		near(t, "RMSNorm dinp", gdi, wdi, kerneltest.F32Tol)
		near(t, "RMSNorm dweight", gdw, wdw, kerneltest.F32Tol)
	})
	t.Run("LogprobForward", func(t *testing.T) {
		r := rand.New(rand.NewPCG(28, 10))
		shapes := logprobShapes
		if !testing.Short() {
			shapes = append(shapes, [4]int{4, 128, 151936, 0}) // Qwen's vocabulary, 4096-column chunks
		}
		for _, s := range shapes {
			N, C, V, chunk := s[0], s[1], s[2], s[3]
			name := fmt.Sprintf("N=%d,C=%d,V=%d,chunk=%d", N, C, V, chunk)
			hidden, weight := randnPar(r, N*C, 1), randnPar(r, V*C, 1)
			targets := logprobTargets(r, N, V)
			wlp, went, wlse, wex := make([]float32, N), make([]float32, N), make([]float32, N), make([]float32, N*C)
			ref.New().LogprobForward(wlp, went, wlse, wex, hidden, weight, targets, N, C, V, chunk)
			lp, ent, lse, ex := make([]float32, N), make([]float32, N), make([]float32, N), make([]float32, N*C)
			b.call("LogprobForward", func(buf func([]float32) *cuda.Buffer, ibuf func([]int32) *cuda.Buffer) error {
				return ops.LogprobForward(buf(lp), buf(ent), buf(lse), buf(ex), buf(hidden), buf(weight), ibuf(targets), N, C, V, chunk)
			})
			near(t, name+" logprob", lp, wlp, kerneltest.F32Tol)
			near(t, name+" entropy", ent, went, kerneltest.F32Tol)
			near(t, name+" lse", lse, wlse, kerneltest.F32Tol)
			near(t, name+" expect", ex, wex, kerneltest.F32Tol)
			dlp, dh := randn(r, N), randn(r, N*C)
			want := append([]float32(nil), dh...)
			ref.New().LogprobBackwardExpect(want, dlp, wex, weight, targets, N, C, V)
			b.call("LogprobBackwardExpect", func(buf func([]float32) *cuda.Buffer, ibuf func([]int32) *cuda.Buffer) error {
				return ops.LogprobBackwardExpect(buf(dh), buf(dlp), buf(wex), buf(weight), ibuf(targets), N, C, V)
			})
			near(t, name+" LogprobBackwardExpect dhidden", dh, want, kerneltest.F32Tol)
		}
	})
	t.Run("Qwen vocabulary rows", func(t *testing.T) {
		if testing.Short() {
			t.Skip("-test.short (run.sh's memcheck step): the small shapes only")
		}
		r := rand.New(rand.NewPCG(28, 8))
		const N, V = 4, 151936
		inp := randn(r, N*V)
		want, got := make([]float32, N*V), make([]float32, N*V)
		ref.New().LogSoftmaxForward(want, inp, N, V)
		b.LogSoftmaxForward(got, inp, N, V)
		near(t, "LogSoftmax out", got, want, kerneltest.F32Tol)
		wEnt, gEnt := make([]float32, N), make([]float32, N)
		ref.New().EntropyForward(wEnt, inp, N, V)
		b.EntropyForward(gEnt, inp, N, V)
		near(t, "Entropy", gEnt, wEnt, kerneltest.F32Tol)
	})
	if err := ops.Unload(); err != nil {
		t.Fatal(err)
	}
}

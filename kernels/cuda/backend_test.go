package cuda_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/cudafake"
	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
)

// emulator is the CUDA emulator library, built once per test binary.
var emulator struct {
	once sync.Once
	emu  *cudafake.Emulator
	err  error
}

// loadEmulator builds the kernels into the CPU emulator (cudafake.BuildEmulator)
// and loads it. Without a C++ compiler the test is skipped, unless CI is set.
func loadEmulator(t *testing.T) *cudafake.Emulator {
	t.Helper()
	emulator.once.Do(func() {
		cxx := os.Getenv("CXX")
		if cxx == "" {
			cxx = "g++"
		}
		dir, err := os.MkdirTemp("", "cudaemu")
		if err != nil {
			emulator.err = err
			return
		}
		lib := filepath.Join(dir, "libhone_cuda_emu.so")
		if emulator.err = cudafake.BuildEmulator(context.Background(), cxx, ".", lib); emulator.err == nil {
			emulator.emu, emulator.err = cudafake.LoadEmulator(lib)
		}
		// Loaded, the library needs no file: the folder goes now rather
		// than stay in $TMPDIR after every run.
		os.RemoveAll(dir)
	})
	// g++ reads the sources, not this process: read them here too, so that
	// go test's cache knows the result depends on them.
	for _, pattern := range []string{"*.cu", "*.cuh", "cpushim/*"} {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			if _, err := os.ReadFile(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	if errors.Is(emulator.err, exec.ErrNotFound) && os.Getenv("CI") == "" {
		t.Skipf("no C++ compiler for the CUDA emulator: %v", emulator.err)
	}
	if emulator.err != nil {
		t.Fatal(emulator.err)
	}
	return emulator.emu
}

// emulatedBackend is a cuda.Backend on an emulated device: managed memory
// is host memory, kernels run on the CPU, GEMMs in the fake cuBLAS.
func emulatedBackend(t *testing.T) (*cuda.Backend, *cudafake.Driver, *cudafake.BLAS) {
	t.Helper()
	return emulatedBackendIn(t, kernels.PrecisionF32)
}

// emulatedBackendIn is emulatedBackend computing in precision p.
func emulatedBackendIn(t *testing.T, p kernels.Precision) (*cuda.Backend, *cudafake.Driver, *cudafake.BLAS) {
	t.Helper()
	drv := cudafake.NewEmulatedDriver(1, 0, loadEmulator(t))
	blas := cudafake.NewBLAS(drv)
	dev, err := cuda.OpenWith(drv, blas, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cuda.NewBackend(dev, p)
	if err != nil {
		dev.Close()
		t.Fatal(err)
	}
	return b, drv, blas
}

// allocOrFail returns alloc(n), failing t where it returns an error: the
// allocators of the tests, on whatever memory, stop the test on a failed
// allocation rather than return it.
func allocOrFail[T any](t *testing.T, alloc func(n int) (T, error), n int) T {
	t.Helper()
	x, err := alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// emulatedMem allocates a test's buffers in an emulated backend's memory,
// failing the test where an allocation fails, so that a test states its
// operands' shapes and not the error checks. The buffers are not freed one
// by one: b.Close releases the emulated device with them. r seeds randF32
// and randBF16; a test that draws no operands leaves it nil.
type emulatedMem struct {
	t *testing.T
	b *cuda.Backend
	r *rand.Rand
}

// f32 allocates n float32 values.
func (m emulatedMem) f32(n int) []float32 {
	m.t.Helper()
	return allocOrFail(m.t, m.b.AllocF32, n)
}

// bf16 allocates n bfloat16 values.
func (m emulatedMem) bf16(n int) []uint16 {
	m.t.Helper()
	return allocOrFail(m.t, m.b.AllocBF16, n)
}

// randF32 allocates n float32 values holding randn's draws from m.r.
func (m emulatedMem) randF32(n int) []float32 {
	m.t.Helper()
	x := m.f32(n)
	copy(x, randn(m.r, n))
	return x
}

// randBF16 allocates n bfloat16 values holding the roundings of randn's
// draws from m.r.
func (m emulatedMem) randBF16(n int) []uint16 {
	m.t.Helper()
	x := m.bf16(n)
	kernels.ToBF16(x, randn(m.r, n))
	return x
}

// bf16Of allocates x's bfloat16 rounding.
func (m emulatedMem) bf16Of(x []float32) []uint16 {
	m.t.Helper()
	y := m.bf16(len(x))
	kernels.ToBF16(y, x)
	return y
}

// nans allocates n float32 NaNs, so that a value a kernel fails to write
// shows in a bitwise comparison.
func (m emulatedMem) nans(n int) []float32 {
	m.t.Helper()
	x := m.f32(n)
	for i := range x {
		x[i] = float32(math.NaN())
	}
	return x
}

// managedCopy allocates b's float32 memory (kernels.AllocF32: managed
// memory on a cuda.Backend) holding a copy of x, failing t where b cannot
// allocate it: the operands of a test that drives a backend through its
// kernels.Backend methods.
func managedCopy(t *testing.T, b kernels.Backend, x []float32) []float32 {
	t.Helper()
	y, err := kernels.AllocF32(b, len(x))
	if err != nil {
		t.Fatal(err)
	}
	copy(y, x)
	return y
}

// conformanceGroups are the groups of kerneltest's suite that
// TestBackendConformance runs: all of them but Logprob, LogprobBF16,
// Entropy, Elementwise, LogSoftmax, AdamW and SwiGLU. The whole suite
// passes on the emulator too, in about 90 s on 2 shared cores (one OS
// thread per CUDA thread; the two logprob groups 50 s of it, a
// chunk-a-column case 140 launches); those seven groups' kernels, with the
// same launch plans, pass the same cases in TestKernelsOnCPUShim, and
// TestBackendDeviceOps runs each of their Backend methods on small shapes
// instead. A group kerneltest gains is not run until it is added here.
// TestBackendOnHardware runs them all.
var conformanceGroups = []string{"Matmul", "MatmulBatched", "Linear", "LinearBF16", "RMSNorm", "RoPE", "GeGLU",
	"Attention", "AttentionWindow", "AttentionDecode", "AttentionDecodeBatch", "Embedding", "CopyZero", "Rows", "BadArguments",
	"CopyToHost"}

// TestBackendConformance runs kerneltest's suite (conformanceGroups) on
// cuda.Backend over the emulated device: the kernels run the .cu sources
// on the CPU with Ops' launch plans, the GEMMs the fake cuBLAS on the same
// memory. The suite allocates its buffers through the backend
// (kernels.AllocF32) and frees them after each group.
func TestBackendConformance(t *testing.T) {
	t.Parallel()
	b, drv, _ := emulatedBackend(t)
	kerneltest.RunOps(t, b, conformanceGroups...)
	// Left live: the backend's scratch only (the int32 edges' buffer and
	// Ops' slots: the bf16 linear's), no buffer of the suite.
	sn, sbytes := b.Scratch()
	if n, bytes := b.Device().Live(); n != sn || bytes != sbytes || sn < 2 {
		t.Errorf("%d buffers (%d bytes) live after the suite, want the backend's %d scratch buffers (%d bytes), at least 2", n, bytes, sn, sbytes)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if n, bytes := drv.Live(); n != 0 {
		t.Errorf("after Close the driver holds %d allocations (%d bytes)", n, bytes)
	}
	if drv.Modules() != 0 || drv.Retained(0) != 0 {
		t.Errorf("after Close: %d modules loaded, primary context retained %d times", drv.Modules(), drv.Retained(0))
	}
}

// TestBackendDeviceOps runs the ops conformanceGroups leaves out, on
// small shapes (the bfloat16 weight at an odd offset), on buffers carved from one allocation at odd offsets (as
// the model carves its slabs), against kernels/ref.
func TestBackendDeviceOps(t *testing.T) {
	t.Parallel()
	b, _, _ := emulatedBackend(t)
	defer b.Close()
	slab, err := b.AllocF32(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer b.FreeF32(slab)
	r := rand.New(rand.NewPCG(28, 12))
	next := 1
	// buf returns n values of the slab, filled from host (copied), at an
	// odd offset.
	buf := func(host []float32) []float32 {
		s := slab[next : next+len(host)]
		next += len(host) + 3
		copy(s, host)
		return s
	}
	const n, N, V = 37, 3, 40
	gate, up, dout, acc := randn(r, n), randn(r, n), randn(r, n), randn(r, n)
	check := func(what string, got []float32, want []float32) {
		t.Helper()
		near(t, what, got, want, kerneltest.F32Tol)
	}
	cl := slices.Clone[[]float32]
	h := ref.New()

	want := make([]float32, n)
	h.SwiGLUForward(want, gate, up, n)
	out := buf(make([]float32, n))
	b.SwiGLUForward(out, buf(gate), buf(up), n)
	check("SwiGLUForward", out, want)
	wg, wu := cl(acc), cl(dout)
	h.SwiGLUBackward(wg, wu, dout, gate, up, n)
	gg, gu := buf(acc), buf(dout)
	b.SwiGLUBackward(gg, gu, buf(dout), buf(gate), buf(up), n)
	check("SwiGLUBackward dgate", gg, wg)
	check("SwiGLUBackward dup", gu, wu)

	// The Set ops (kernels.GatedSetter) give exactly what the accumulating
	// kernels add to zeros on this device, whatever dgate and dup held, and
	// act what the forward gives (or leave it alone when nil).
	nan := make([]float32, n)
	for i := range nan {
		nan[i] = float32(math.NaN())
	}
	for _, g := range []struct {
		name string
		acc  func(dgate, dup, dout, gate, up []float32, n int)
		fwd  func(out, gate, up []float32, n int)
		set  func(dgate, dup, act, dout, gate, up []float32, n int)
	}{
		{"SwiGLUBackwardSet", b.SwiGLUBackward, b.SwiGLUForward, b.SwiGLUBackwardSet},
		{"GeGLUBackwardSet", b.GeGLUBackward, b.GeGLUForward, b.GeGLUBackwardSet},
	} {
		zg, zu, fo := buf(make([]float32, n)), buf(make([]float32, n)), buf(make([]float32, n))
		sd, sg, su := buf(dout), buf(gate), buf(up)
		g.acc(zg, zu, sd, sg, su, n)
		g.fwd(fo, sg, su, n)
		for _, withAct := range []bool{false, true} {
			xg, xu, xa := buf(nan), buf(nan), buf(nan)
			var act []float32
			if withAct {
				act = xa
			}
			g.set(xg, xu, act, sd, sg, su, n)
			for i := range n {
				if xg[i] != zg[i] || xu[i] != zu[i] {
					t.Errorf("%s [%d]: dgate %g dup %g, accumulated onto zeros %g %g", g.name, i, xg[i], xu[i], zg[i], zu[i])
					break
				}
				if withAct && xa[i] != fo[i] || !withAct && !math.IsNaN(float64(xa[i])) {
					t.Errorf("%s (act %v) [%d]: act %g, forward %g", g.name, withAct, i, xa[i], fo[i])
					break
				}
			}
		}
	}

	hp := kernels.AdamWParams{LR: 1e-2, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1}
	vv := make([]float32, n)
	for i := range vv {
		vv[i] = up[i] * up[i]
	}
	wp, wm, wv := cl(gate), cl(dout), cl(vv)
	h.AdamW(wp, up, wm, wv, n, 3, hp)
	gp, gm, gv := buf(gate), buf(dout), buf(vv)
	b.AdamW(gp, buf(up), gm, gv, n, 3, hp)
	check("AdamW param", gp, wp)
	check("AdamW m", gm, wm)
	check("AdamW v", gv, wv)

	h.Add(want, gate, up, n)
	b.Add(out, buf(gate), buf(up), n)
	check("Add", out, want)
	h.AddScalar(want, gate, 1, n)
	b.AddScalar(out, buf(gate), 1, n)
	check("AddScalar", out, want)
	if got, want := b.SumSquares(buf(gate), n), h.SumSquares(gate, n); math.Abs(got-want) > 1e-12*want {
		t.Errorf("SumSquares = %.17g, want %.17g", got, want)
	}
	h.Scale(want, gate, -0.3, n)
	b.Scale(out, buf(gate), -0.3, n)
	check("Scale", out, want)
	wa, ga := cl(acc), buf(acc)
	h.AXPY(wa, gate, 1.5, n)
	b.AXPY(ga, buf(gate), 1.5, n)
	check("AXPY", ga, wa)

	logits, dl, dent, dacc := randn(r, N*V), randn(r, N*V), randn(r, N), randn(r, N*V)
	wls := make([]float32, N*V)
	h.LogSoftmaxForward(wls, logits, N, V)
	gls := buf(make([]float32, N*V))
	b.LogSoftmaxForward(gls, buf(logits), N, V)
	check("LogSoftmaxForward", gls, wls)
	wd, gd := cl(dacc), buf(dacc)
	h.LogSoftmaxBackward(wd, dl, wls, N, V)
	b.LogSoftmaxBackward(gd, buf(dl), gls, N, V)
	check("LogSoftmaxBackward", gd, wd)
	went := make([]float32, N)
	h.EntropyForward(went, logits, N, V)
	gent := buf(make([]float32, N))
	b.EntropyForward(gent, buf(logits), N, V)
	check("EntropyForward", gent, went)
	wd, gd = cl(dacc), buf(dacc)
	h.EntropyBackward(wd, dent, logits, N, V)
	b.EntropyBackward(gd, buf(dent), buf(logits), N, V)
	check("EntropyBackward", gd, wd)

	// The chunked logprob: 4 chunks of 16 columns (the last of 2), a row
	// ignored (target −1) and one on the last column; without and with
	// expect; its backward from expect (device) and recomputed (host).
	const C, LV, chunk = 8, 50, 16
	hid, w := randn(r, N*C), randn(r, LV*C)
	tg := []int32{7, -1, LV - 1}
	wlp, went2, wlse, wex := make([]float32, N), make([]float32, N), make([]float32, N), make([]float32, N*C)
	h.LogprobForward(wlp, went2, wlse, wex, hid, w, tg, N, C, LV, chunk)
	ghid, gw := buf(hid), buf(w)
	for _, withExpect := range []bool{false, true} {
		lp, ent, lse := buf(make([]float32, N)), buf(make([]float32, N)), buf(make([]float32, N))
		var ex []float32
		if withExpect {
			ex = buf(make([]float32, N*C))
		}
		b.LogprobForward(lp, ent, lse, ex, ghid, gw, tg, N, C, LV, chunk)
		what := fmt.Sprintf("LogprobForward (expect %v) ", withExpect)
		check(what+"logprob", lp, wlp)
		check(what+"entropy", ent, went2)
		check(what+"lse", lse, wlse)
		if withExpect {
			check(what+"expect", ex, wex)
		}
	}
	dlp, dentropy, dh := randn(r, N), randn(r, N), randn(r, N*C)
	wdh, gdh := cl(dh), buf(dh)
	h.LogprobBackwardExpect(wdh, dlp, wex, w, tg, N, C, LV)
	b.LogprobBackwardExpect(gdh, buf(dlp), buf(wex), gw, tg, N, C, LV)
	near(t, "LogprobBackwardExpect", gdh, wdh, 1e-4)
	dw := randn(r, LV*C)
	wdh, wdw, gdh, gdw := cl(dh), cl(dw), buf(dh), buf(dw)
	h.LogprobBackward(wdh, wdw, dlp, dentropy, wlse, went2, hid, w, tg, N, C, LV, chunk)
	b.LogprobBackward(gdh, gdw, buf(dlp), buf(dentropy), buf(wlse), buf(went2), ghid, gw, tg, N, C, LV, chunk)
	near(t, "LogprobBackward dhidden", gdh, wdh, 1e-4)
	near(t, "LogprobBackward dweight", gdw, wdw, 1e-4)

	// The same on a bfloat16 weight (exact mode: ref on the same values).
	wh := make([]uint16, LV*C)
	kernels.ToBF16(wh, w)
	whb, err := b.AllocBF16(LV*C + 1) // a view at an odd offset
	if err != nil {
		t.Fatal(err)
	}
	defer b.FreeBF16(whb)
	gwh := whb[1:]
	copy(gwh, wh)
	h.LogprobForwardBF16(wlp, went2, wlse, wex, hid, wh, tg, N, C, LV, chunk)
	lp, ent, lse, ex := buf(make([]float32, N)), buf(make([]float32, N)), buf(make([]float32, N)), buf(make([]float32, N*C))
	b.LogprobForwardBF16(lp, ent, lse, ex, ghid, gwh, tg, N, C, LV, chunk)
	check("LogprobForwardBF16 logprob", lp, wlp)
	check("LogprobForwardBF16 lse", lse, wlse)
	check("LogprobForwardBF16 expect", ex, wex)
	wdh, gdh = cl(dh), buf(dh)
	h.LogprobBackwardBF16(wdh, dlp, dentropy, wlse, went2, hid, wh, tg, N, C, LV, chunk)
	b.LogprobBackwardBF16(gdh, buf(dlp), buf(dentropy), buf(wlse), buf(went2), ghid, gwh, tg, N, C, LV, chunk)
	near(t, "LogprobBackwardBF16 dhidden", gdh, wdh, 1e-4)
	wdh, gdh = cl(dh), buf(dh)
	h.LogprobBackwardExpectBF16(wdh, dlp, wex, wh, tg, N, C, LV)
	b.LogprobBackwardExpectBF16(gdh, buf(dlp), buf(wex), gwh, tg, N, C, LV)
	near(t, "LogprobBackwardExpectBF16 dhidden", gdh, wdh, 1e-4)
}

// TestBackendBF16Compute runs kerneltest's bf16-weight linear group on a
// backend computing in PrecisionBF16 (bf16 operands through GemmEx, f32
// accumulation), and its Matmul group (TF32), at the mode's tolerances.
func TestBackendBF16Compute(t *testing.T) {
	t.Parallel()
	b, _, blas := emulatedBackendIn(t, kernels.PrecisionBF16)
	defer b.Close()
	kerneltest.RunOps(t, b, "LinearBF16", "Matmul")
	if !slices.ContainsFunc(blas.GemmTypes(), func(g cuda.GemmTypes) bool { return g.A == cuda.R16BF && g.B == cuda.R16BF }) {
		t.Error("no GEMM on bfloat16 operands in PrecisionBF16")
	}
}

// TestBackendGoldens checks the device ops with PyTorch goldens on the
// emulated device.
func TestBackendGoldens(t *testing.T) {
	t.Parallel()
	b, _, _ := emulatedBackend(t)
	defer b.Close()
	kerneltest.RunGoldenOps(t, b, "../../testdata/golden/kernels", "RoPE", "AdamW", "Logprob")
}

// TestBackendOpsWhere: the ops launch their kernels and GEMMs on the
// device; Name says the precision and device.
func TestBackendOpsWhere(t *testing.T) {
	b, drv, blas := emulatedBackend(t)
	defer b.Close()
	if name := b.Name(); !strings.HasPrefix(name, "cuda/f32 cuda:0 (Fake Device 0") {
		t.Errorf("Name %q", name)
	}
	x, err := b.AllocF32(64)
	if err != nil {
		t.Fatal(err)
	}
	defer b.FreeF32(x)
	n0, g0 := len(drv.Launches()), len(blas.Gemms())
	b.Add(x[:32], x[:32], x[32:], 32)
	b.Matmul(x[:4], x[4:8], x[8:12], 2, 2, 2, false, false, 0)
	b.Copy(x[:8], x[8:16], 8)
	var kernels []string
	for _, l := range drv.Launches()[n0:] {
		kernels = append(kernels, l.Kernel)
	}
	if len(kernels) != 2 || kernels[0] != "add" {
		t.Errorf("launches %v, want add and a copy", kernels)
	}
	if g := blas.Gemms()[g0:]; len(g) != 1 {
		t.Errorf("%d GEMMs, want 1", len(g))
	}
}

// TestBackendForeignSlice: a slice that is not the backend's memory panics
// with the op's and the argument's name, on a device op and a host op; a
// view of an allocation is accepted.
func TestBackendForeignSlice(t *testing.T) {
	b, _, _ := emulatedBackend(t)
	defer b.Close()
	x, err := b.AllocF32(16)
	if err != nil {
		t.Fatal(err)
	}
	defer b.FreeF32(x)
	host := make([]float32, 16)
	for _, c := range []struct {
		says string
		call func()
	}{
		{"kernels.Add: b (8 values", func() { b.Add(x[:8], x[8:], host[:8], 8) }},
		{"kernels.RMSNormForward: inp", func() { b.RMSNormForward(x[:4], x[4:6], host[:4], x[6:8], 2, 2, 1e-6) }},
		{"kernels.Copy: src", func() { b.Copy(x[:4], host[:4], 4) }},
		{"kernels.Matmul: a", func() { b.Matmul(x[:4], host[:4], x[4:8], 2, 2, 2, false, false, 0) }},
		{"kernels.EmbeddingForwardBF16: table", func() { b.EmbeddingForwardBF16(x[:2], []int32{0}, make([]uint16, 2), 1, 2, 1) }},
		// Past the allocation's end (a slice made with unsafe) is not its memory either.
		{"kernels.Scale: a", func() { b.Scale(x[:4], unsafe.Slice(&x[12], 8), 2, 4) }},
	} {
		func() {
			defer func() {
				msg := fmt.Sprint(recover())
				if !strings.Contains(msg, c.says) || !strings.Contains(msg, "not memory of the CUDA backend") {
					t.Errorf("panic %q, want it to say %q", msg, c.says)
				}
			}()
			c.call()
		}()
	}
	for i := range x {
		x[i] = float32(i)
	}
	b.Add(x[:4], x[4:8], x[12:16], 4) // views at offsets
	if want := []float32{16, 18, 20, 22}; !slices.Equal(x[:4], want) {
		t.Errorf("Add on views: %v, want %v", x[:4], want)
	}
}

// TestBackendFreeClose: allocations are zeroed managed memory counted by the
// device; Free releases them (a view, a double free and memory from make
// panic); Close frees what is left, says so, and releases the device.
func TestBackendFreeClose(t *testing.T) {
	b, drv, _ := emulatedBackend(t)
	dev := b.Device()
	x, err := b.AllocF32(1000)
	if err != nil {
		t.Fatal(err)
	}
	h, err := b.AllocBF16(7)
	if err != nil {
		t.Fatal(err)
	}
	if len(x) != 1000 || len(h) != 7 || slices.ContainsFunc(x, func(v float32) bool { return v != 0 }) || slices.ContainsFunc(h, func(v uint16) bool { return v != 0 }) {
		t.Fatalf("allocations of %d and %d values, not all zero", len(x), len(h))
	}
	if n, bytes := dev.Live(); n != 2 || bytes < 4000+14 {
		t.Errorf("Live = %d buffers, %d bytes after two allocations", n, bytes)
	}
	if e, err := b.AllocF32(0); err != nil || len(e) != 0 {
		t.Errorf("AllocF32(0) = %d values, %v", len(e), err)
	}
	if _, err := b.AllocF32(-1); err == nil {
		t.Error("AllocF32(-1) did not fail")
	}
	mustPanic := func(what, says string, f func()) {
		t.Helper()
		defer func() {
			if msg := fmt.Sprint(recover()); !strings.Contains(msg, says) {
				t.Errorf("%s: panic %q, want %q", what, msg, says)
			}
		}()
		f()
	}
	mustPanic("free of a view", "not a whole allocation", func() { b.FreeF32(x[1:]) })
	mustPanic("free of make", "not a whole allocation", func() { b.FreeF32(make([]float32, 3)) })
	mustPanic("free of bf16 as f32", "not a whole allocation", func() { b.FreeF32(unsafe.Slice((*float32)(unsafe.Pointer(&h[0])), 3)) })
	b.FreeF32(x)
	mustPanic("double free", "not a whole allocation", func() { b.FreeF32(x) })
	if n, _ := dev.Live(); n != 1 {
		t.Errorf("Live = %d after one free, want 1", n)
	}
	b.FreeBF16(h)
	if n, bytes := dev.Live(); n != 0 || bytes != 0 {
		t.Errorf("Live = %d buffers, %d bytes after freeing both", n, bytes)
	}
	if _, err := b.AllocF32(10); err != nil { // left for Close
		t.Fatal(err)
	}
	err = b.Close()
	if err == nil || !strings.Contains(err.Error(), "1 allocations (40 bytes) not freed") {
		t.Errorf("Close with an allocation left: %v", err)
	}
	if n, _ := drv.Live(); n != 0 {
		t.Errorf("the driver holds %d allocations after Close", n)
	}
	if drv.Modules() != 0 || drv.Retained(0) != 0 {
		t.Errorf("after Close: %d modules, context retained %d times", drv.Modules(), drv.Retained(0))
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	one := make([]float32, 1)
	mustPanic("op after Close", "kernels.Add: the CUDA backend is closed", func() { b.Add(one, one, one, 1) })
	mustPanic("host op after Close", "kernels.Copy: the CUDA backend is closed", func() { b.Copy(one, one, 1) })
	if _, err := b.AllocF32(1); err == nil {
		t.Error("AllocF32 after Close did not fail")
	}
}

// TestBackendEdges: the int32 arguments are host slices (Go memory), copied
// into one scratch buffer of device memory (cuMemAlloc, not managed) with
// one cuMemcpyHtoD a call; the scratch grows when a call needs more and is
// reused, not allocated per call.
func TestBackendEdges(t *testing.T) {
	b, drv, _ := emulatedBackend(t)
	defer b.Close()
	const C, V = 3, 5
	table, err := b.AllocF32(V * C)
	if err != nil {
		t.Fatal(err)
	}
	defer b.FreeF32(table)
	for i := range table {
		table[i] = float32(i)
	}
	for call, N := range []int{2, 3, 5000, 7} {
		ids := make([]int32, N) // Go memory
		for i := range ids {
			ids[i] = int32((i*3 + 1) % V)
		}
		out, err := b.AllocF32(N * C)
		if err != nil {
			t.Fatal(err)
		}
		managed, dev, copies := drv.Calls("cuMemAllocManaged"), drv.Calls("cuMemAlloc_v2"), drv.Calls("cuMemcpyHtoD_v2")
		b.EmbeddingForward(out, ids, table, N, C, V)
		if n := drv.Calls("cuMemAllocManaged") - managed; n != 0 {
			t.Errorf("N=%d: %d managed allocations for the ids, want none", N, n)
		}
		wantDev := 0
		if call == 0 || N == 5000 { // the first call makes the scratch; 5000 values outgrow its 4096
			wantDev = 1
		}
		if n := drv.Calls("cuMemAlloc_v2") - dev; n != wantDev {
			t.Errorf("N=%d: %d device allocations for the ids, want %d", N, n, wantDev)
		}
		if n := drv.Calls("cuMemcpyHtoD_v2") - copies; n != 1 {
			t.Errorf("N=%d: %d host-to-device copies, want one", N, n)
		}
		want := make([]float32, N*C)
		ref.New().EmbeddingForward(want, ids, table, N, C, V)
		if !slices.Equal(out, want) {
			t.Fatalf("N=%d: gather from host ids differs from ref", N)
		}
		if n, _ := b.Device().Live(); n != 3 { // table, out, scratch
			t.Errorf("N=%d: %d buffers live, want table, out and one scratch", N, n)
		}
		b.FreeF32(out)
	}
}

// TestBackendConcurrent: goroutines allocating, running device and host
// ops and freeing at once get their own results (the backend serializes
// its ops; -race checks its bookkeeping).
func TestBackendConcurrent(t *testing.T) {
	b, _, _ := emulatedBackend(t)
	defer b.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			x, err := b.AllocF32(3 * 8)
			if err != nil {
				errs <- err
				return
			}
			defer b.FreeF32(x)
			for i := range 8 {
				x[i], x[8+i] = float32(g), float32(i)
			}
			for range 3 {
				b.Add(x[16:], x[:8], x[8:16], 8) // device
				b.Copy(x[:8], x[16:], 8)         // host
			}
			for i := range 8 {
				if want := float32(g + 3*i); x[i] != want {
					errs <- fmt.Errorf("goroutine %d: x[%d] = %g, want %g", g, i, x[i], want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n, _ := b.Device().Live(); n != 0 {
		t.Errorf("%d buffers live after every goroutine freed its own", n)
	}
}

// TestOpenBackend goes through the real loader to the fake C libraries:
// their driver takes no PTX, so making the backend fails, and OpenBackend
// closes the device again (no allocation, context or handle left); a
// missing library is Open's *MissingError.
func TestOpenBackend(t *testing.T) {
	libs := fakeLibs(t)
	_, live := fakeHooks(t, libs.Driver)
	_, err := cuda.OpenBackend(cuda.Options{DriverLib: libs.Driver, BLASLib: libs.BLAS}, kernels.PrecisionF32)
	if err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_INVALID_IMAGE") {
		t.Fatalf("OpenBackend on the fake C driver: %v, want its refusal of the PTX", err)
	}
	if n := live(); n != 0 {
		t.Errorf("%d allocations left by the failed OpenBackend", n)
	}
	_, err = cuda.OpenBackend(cuda.Options{DriverLib: filepath.Join(t.TempDir(), "libcuda.so.1")}, kernels.PrecisionF32)
	var m *cuda.MissingError
	if !errors.As(err, &m) || m.What != "CUDA driver library" {
		t.Errorf("OpenBackend without a driver: %v", err)
	}
}

// TestBackendPrecision: the backend computes in the precision asked
// (Ops.SetPrecision), and refuses one that does not exist.
func TestBackendPrecision(t *testing.T) {
	drv := cudafake.NewDriver(1, 0)
	dev, err := cuda.OpenWith(drv, cudafake.NewBLAS(drv), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if _, err := cuda.NewBackend(dev, kernels.Precision(7)); err == nil || !strings.Contains(err.Error(), "unknown compute precision") {
		t.Errorf("NewBackend of precision 7: %v", err)
	}
	if drv.Modules() != 0 {
		t.Errorf("%d modules left loaded by the failed NewBackend", drv.Modules())
	}
	b, err := cuda.NewBackend(dev, kernels.PrecisionBF16)
	if err != nil {
		t.Fatal(err)
	}
	if p := kernels.PrecisionOf(b); p != kernels.PrecisionBF16 || !strings.HasPrefix(b.Name(), "cuda/bf16 ") {
		t.Errorf("precision %v, name %q", p, b.Name())
	}
	if err := b.Close(); err != nil {
		t.Error(err)
	}
}

// TestEmulator: the emulator holds every kernel of the .cu files, and a
// launch it cannot make (wrong parameter count) or that diverges fails as
// CUDA_ERROR_LAUNCH_FAILED with the shim's message.
func TestEmulator(t *testing.T) {
	emu := loadEmulator(t)
	got, want := emu.Kernels(), sourceKernels(t)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("emulator holds %v, the .cu files define %v", got, want)
	}
	drv := cudafake.NewEmulatedDriver(1, 0, emu)
	dev, err := cuda.OpenWith(drv, cudafake.NewBLAS(drv), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	mod, err := dev.LoadKernels("elementwise")
	if err != nil {
		t.Fatal(err)
	}
	k, err := mod.Kernel("add")
	if err != nil {
		t.Fatal(err)
	}
	buf, err := dev.AllocManaged(4)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Free()
	err = k.Launch(cuda.Dim3{X: 1, Y: 1, Z: 1}, cuda.Dim3{X: 32, Y: 1, Z: 1}, 0, buf, buf, 4)
	var ce *cuda.Error
	if !errors.As(err, &ce) || ce.Name != "CUDA_ERROR_LAUNCH_FAILED" || !strings.Contains(err.Error(), "3 parameters for a kernel of 4") {
		t.Errorf("launch with a parameter missing: %v", err)
	}
	if err := k.Launch(cuda.Dim3{X: 1, Y: 1, Z: 1}, cuda.Dim3{X: 32, Y: 1, Z: 1}, 0, buf, buf, buf, 4); err != nil {
		t.Fatal(err)
	}
}

// TestManagedThroughLoader calls cuMemAllocManaged and cuMemsetD32_v2 of
// the fake libcuda through the real loader (purego).
func TestManagedThroughLoader(t *testing.T) {
	libs := fakeLibs(t)
	drv, err := cuda.LoadDriver(libs.Driver)
	if err != nil {
		t.Fatal(err)
	}
	currentContext(t, drv)
	p, err := drv.MemAllocManaged(4 * 5)
	if err != nil {
		t.Fatal(err)
	}
	if err := drv.MemsetD32(p, 0x3f800000, 5); err != nil { // 1.0
		t.Fatal(err)
	}
	out := readF32(t, drv, p, 5)
	if !slices.Equal(out, []float32{1, 1, 1, 1, 1}) {
		t.Errorf("after cuMemsetD32 of 1.0: %v", out)
	}
	if err := drv.MemFree(p); err != nil {
		t.Error(err)
	}
}

// TestBackendSumSquares runs sumsquares.cu on the emulated device through
// Backend.SumSquares: against ref's index-order float64 sum (kerneltest's
// 1e-12 relative bound) on sizes around the block and the capped grid (the
// largest makes each thread take several values), the same bits again for
// the same values, only the first n values read, and NaN or +Inf when a
// value is not finite.
func TestBackendSumSquares(t *testing.T) {
	t.Parallel()
	b, _, _ := emulatedBackend(t)
	defer b.Close()
	r := rand.New(rand.NewPCG(28, 2))
	h := ref.New()
	for _, n := range []int{1, 255, 257, 3000, 70001} {
		x, err := b.AllocF32(n + 1)
		if err != nil {
			t.Fatal(err)
		}
		for i := range x {
			x[i] = float32(r.NormFloat64() * 3)
		}
		x[n] = float32(math.NaN()) // past n: never read
		want := h.SumSquares(x, n)
		got := b.SumSquares(x, n)
		if math.Abs(got-want) > 1e-12*want {
			t.Errorf("n=%d: SumSquares = %.17g, want %.17g", n, got, want)
		}
		if again := b.SumSquares(x, n); math.Float64bits(again) != math.Float64bits(got) {
			t.Errorf("n=%d: SumSquares gave %.17g, then %.17g", n, got, again)
		}
		if n > 65536 {
			b.FreeF32(x)
			continue // 256 blocks of 256 OS threads a launch: enough
		}
		for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
			i := r.IntN(n)
			old := x[i]
			x[i] = bad
			if s := b.SumSquares(x, n); !math.IsNaN(s) && !math.IsInf(s, 1) {
				t.Errorf("n=%d: SumSquares with %g at %d = %g, want NaN or +Inf", n, bad, i, s)
			}
			x[i] = old
		}
		b.FreeF32(x)
	}
}

// TestBackendProfile: a profile counts each op by name while it runs, and
// nothing before StartProfile or after StopProfile.
func TestBackendProfile(t *testing.T) {
	b, _, _ := emulatedBackend(t)
	defer b.Close()
	x, err := b.AllocF32(64)
	if err != nil {
		t.Fatal(err)
	}
	defer b.FreeF32(x)
	b.Scale(x, x, 2, len(x)) // before the profile: not counted
	if got := b.StopProfile(); len(got) != 0 {
		t.Fatalf("no profile ran, StopProfile gave %v", got)
	}
	b.StartProfile()
	for range 3 {
		b.Scale(x, x, 2, len(x))
	}
	b.Zero(x, len(x))
	got := b.StopProfile()
	b.Scale(x, x, 2, len(x)) // after the profile: not counted
	if len(got) != 2 {
		t.Fatalf("profile %v: want Scale and Zero", got)
	}
	calls := map[string]int{}
	for _, o := range got {
		calls[o.Op] = o.Calls
		if o.Total <= 0 {
			t.Errorf("%s: total %v, want > 0", o.Op, o.Total)
		}
	}
	if calls["Scale"] != 3 || calls["Zero"] != 1 {
		t.Errorf("calls %v, want Scale 3 and Zero 1", calls)
	}
	if got[0].Total < got[1].Total {
		t.Errorf("profile not ordered by total: %v", got)
	}
}

package cuda_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/cudafake"
)

// built holds the fake libraries compiled once for this test binary.
var built struct {
	once sync.Once
	dir  string
	libs cudafake.Libs
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// fakeLibs returns a fresh copy of the C stand-ins for libcuda and
// libcublas (compiled once): a copy at a path of its own loads as a
// library of its own, with its own state. Without a C compiler the test is
// skipped, unless CI is set.
func fakeLibs(t *testing.T) cudafake.Libs {
	t.Helper()
	built.once.Do(func() {
		cc := os.Getenv("CC")
		if cc == "" {
			cc = "gcc" // as cgo
		}
		if built.dir, built.err = os.MkdirTemp("", "cudafake"); built.err == nil {
			built.libs, built.err = cudafake.BuildLibs(context.Background(), cc, built.dir)
		}
	})
	if errors.Is(built.err, exec.ErrNotFound) && os.Getenv("CI") == "" {
		t.Skipf("no C compiler to build the fake CUDA libraries: %v", built.err)
	}
	if built.err != nil {
		t.Fatal(built.err)
	}
	dir := t.TempDir()
	libs := cudafake.Libs{Driver: filepath.Join(dir, filepath.Base(built.libs.Driver)), BLAS: filepath.Join(dir, filepath.Base(built.libs.BLAS)),
		BLASLt: filepath.Join(dir, filepath.Base(built.libs.BLASLt))}
	for src, dst := range map[string]string{built.libs.Driver: libs.Driver, built.libs.BLAS: libs.BLAS, built.libs.BLASLt: libs.BLASLt} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return libs
}

// fakeHooks binds the fake driver's test hooks in this process.
func fakeHooks(t *testing.T, driver string) (setDevices func(int32), live func() int64) {
	t.Helper()
	h, err := purego.Dlopen(driver, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	purego.RegisterLibFunc(&setDevices, h, "hone_fake_cuda_set_devices")
	purego.RegisterLibFunc(&live, h, "hone_fake_cuda_live")
	return setDevices, live
}

func asMissing(t *testing.T, err error, what string) *cuda.MissingError {
	t.Helper()
	var m *cuda.MissingError
	if !errors.As(err, &m) || m.What != what {
		t.Fatalf("got %v (%T), want a *MissingError for %q", err, err, what)
	}
	return m
}

// TestLoadExplicitPathMissing: an explicit path that does not exist gives a
// MissingError naming the library, the path tried and the variable to set.
func TestLoadExplicitPathMissing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "libcuda.so.1")
	_, err := cuda.LoadDriver(p)
	m := asMissing(t, err, "CUDA driver library")
	if !slices.Equal(m.Tried, []string{p}) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "HONE_LIBCUDA") {
		t.Errorf("tried %q, message %q", m.Tried, err)
	}
	_, err = cuda.LoadBLAS(p)
	m = asMissing(t, err, "cuBLAS library")
	if !strings.Contains(err.Error(), "HONE_LIBCUBLAS") {
		t.Errorf("message %q lacks the variable to set", err)
	}
}

// TestLoadSonames: without a path the loader tries the driver's soname and
// cuBLAS's for CUDA 13, 12 and 11, newest first. Where the libraries are
// installed there is nothing to see.
func TestLoadSonames(t *testing.T) {
	if _, err := cuda.LoadDriver(""); err != nil {
		m := asMissing(t, err, "CUDA driver library")
		if want := []string{"libcuda.so.1", "libcuda.so"}; !slices.Equal(m.Tried, want) {
			t.Errorf("driver: tried %q, want %q", m.Tried, want)
		}
	}
	if _, err := cuda.LoadBLAS(""); err != nil {
		m := asMissing(t, err, "cuBLAS library")
		if want := []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"}; !slices.Equal(m.Tried, want) {
			t.Errorf("cuBLAS: tried %q, want %q", m.Tried, want)
		}
	}
}

// TestLoadLacksSymbol: a library that loads but lacks an entry point (here
// cuBLAS offered as the driver) is refused, naming the symbol.
func TestLoadLacksSymbol(t *testing.T) {
	libs := fakeLibs(t)
	_, err := cuda.LoadDriver(libs.BLAS)
	asMissing(t, err, "CUDA driver library")
	if !strings.Contains(err.Error(), "missing symbol cuInit") {
		t.Errorf("message %q does not name the missing symbol", err)
	}
}

func f32bytes(s []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 4*len(s))
}

// bf16bytes returns x's bfloat16 roundings as little-endian bytes, the
// operand a test hands the C fake's bfloat16 GEMMs.
func bf16bytes(x ...float32) []byte {
	out := make([]byte, 0, 2*len(x))
	for _, v := range x {
		h := kernels.BF16(v)
		out = append(out, byte(h), byte(h>>8))
	}
	return out
}

// loadFakeBLAS binds the C fake libcuda and libcublas of libs through the
// loader and creates a cuBLAS handle, destroyed when t ends: the set-up of
// the tests that call the C fake's cuBLAS entry points directly, without a
// Device.
func loadFakeBLAS(t *testing.T, libs cudafake.Libs) (cuda.Driver, cuda.BLAS, cuda.BLASHandle) {
	t.Helper()
	drv, errDrv := cuda.LoadDriver(libs.Driver)
	blas, errBLAS := cuda.LoadBLAS(libs.BLAS)
	if err := errors.Join(errDrv, errBLAS); err != nil {
		t.Fatal(err)
	}
	h, err := blas.Create()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { blas.Destroy(h) })
	return drv, blas, h
}

// readF32 copies n float32 values at p of drv's memory to the host.
func readF32(t *testing.T, drv cuda.Driver, p cuda.DevPtr, n int) []float32 {
	t.Helper()
	x := make([]float32, n)
	if err := drv.MemcpyDtoH(f32bytes(x), p); err != nil {
		t.Fatal(err)
	}
	return x
}

// devicePtr allocates len(raw) bytes of drv's memory holding raw, freed
// when t ends.
func devicePtr(t *testing.T, drv cuda.Driver, raw []byte) cuda.DevPtr {
	t.Helper()
	p, err := drv.MemAlloc(len(raw))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { drv.MemFree(p) })
	if err := drv.MemcpyHtoD(p, raw); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDriverThroughLoader drives every bound driver entry point of the fake
// libcuda through purego: values in and out, kernel parameters, and error
// names and descriptions from cuGetErrorName/cuGetErrorString.
func TestDriverThroughLoader(t *testing.T) {
	libs := fakeLibs(t)
	drv, err := cuda.LoadDriver(libs.Driver)
	if err != nil {
		t.Fatal(err)
	}
	setDevices, live := fakeHooks(t, libs.Driver)
	setDevices(0)
	err = drv.Init()
	var ce *cuda.Error
	if !errors.As(err, &ce) || ce.Code != cuda.CUDAErrorNoDevice || ce.Name != "CUDA_ERROR_NO_DEVICE" ||
		err.Error() != "cuInit: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)" {
		t.Fatalf("cuInit without devices: %v", err)
	}
	setDevices(2)
	if err := drv.Init(); err != nil {
		t.Fatal(err)
	}
	if v, err := drv.Version(); v != 13000 || err != nil {
		t.Errorf("version %d, %v", v, err)
	}
	if n, err := drv.DeviceCount(); n != 2 || err != nil {
		t.Errorf("count %d, %v", n, err)
	}
	dev, err := drv.DeviceGet(1)
	if err != nil {
		t.Fatal(err)
	}
	if name, err := drv.DeviceName(dev); name != "Fake CUDA Device 1" || err != nil {
		t.Errorf("name %q, %v", name, err)
	}
	if _, err := drv.DeviceGet(2); !errors.As(err, &ce) || ce.Name != "CUDA_ERROR_INVALID_DEVICE" {
		t.Errorf("device 2 of 2: %v", err)
	}
	ctx, err := drv.PrimaryCtxRetain(dev)
	if err != nil || drv.CtxSetCurrent(ctx) != nil {
		t.Fatal(err)
	}

	const n = 37
	p, err := drv.MemAlloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	in := make([]float32, n)
	for i := range in {
		in[i] = float32(i) - 0.5
	}
	if err := drv.MemcpyHtoD(p, f32bytes(in)); err != nil {
		t.Fatal(err)
	}
	mod, err := drv.ModuleLoadData([]byte("//fake module\x00"))
	if err != nil {
		t.Fatal(err)
	}
	fill, err := drv.ModuleGetFunction(mod, "fill")
	if err != nil {
		t.Fatal(err)
	}
	// fill(p, 7, 20) on 3 blocks of 8 threads covers 24 ≥ 20 elements.
	v, cnt := float32(7), int32(20)
	if err := drv.LaunchKernel(fill, cuda.Dim3{X: 3, Y: 1, Z: 1}, cuda.Dim3{X: 8, Y: 1, Z: 1}, 0,
		[]unsafe.Pointer{unsafe.Pointer(&p), unsafe.Pointer(&v), unsafe.Pointer(&cnt)}); err != nil {
		t.Fatal(err)
	}
	if err := drv.CtxSynchronize(); err != nil {
		t.Fatal(err)
	}
	out := readF32(t, drv, p, n)
	for i := range out {
		want := in[i]
		if i < 20 {
			want = 7
		}
		if out[i] != want {
			t.Fatalf("element %d = %v after fill, want %v", i, out[i], want)
		}
	}
	if got := live(); got != 1 {
		t.Errorf("%d live allocations, want 1", got)
	}
	if err := drv.MemFree(p); err != nil || live() != 0 {
		t.Errorf("free: %v, %d live", err, live())
	}

	if _, err := drv.ModuleGetFunction(mod, "nope"); !errors.As(err, &ce) || ce.Name != "CUDA_ERROR_NOT_FOUND" || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown kernel: %v", err)
	}
	if _, err := drv.ModuleLoadData([]byte("not ptx\x00")); !errors.As(err, &ce) || ce.Name != "CUDA_ERROR_INVALID_IMAGE" {
		t.Errorf("bad image: %v", err)
	}
	if err := drv.ModuleUnload(mod); err != nil {
		t.Error(err)
	}
	if err := drv.PrimaryCtxRelease(dev); err != nil {
		t.Error(err)
	}
}

// TestBLASThroughLoader calls the fake cuBLAS's GEMMs through purego — the
// 14- and 18-argument calls with alpha and beta by pointer — on a 2×3·3×2
// column-major product worked by hand, and checks its argument error.
func TestBLASThroughLoader(t *testing.T) {
	libs := fakeLibs(t)
	drv, blas, h := loadFakeBLAS(t, libs)
	if blas.Path() != libs.BLAS || drv.Path() != libs.Driver {
		t.Errorf("paths %q %q", drv.Path(), blas.Path())
	}
	// Column-major A [2,3] = [[1 2 3] [4 5 6]], B [3,2] = [[1 0] [0 1] [1 1]];
	// A·B = [[4 5] [10 11]]; with alpha 2, beta 1 onto C = [[1 1] [1 1]]: [[9 11] [21 23]].
	a := []float32{1, 4, 2, 5, 3, 6}
	b := []float32{1, 0, 1, 0, 1, 1}
	c := []float32{1, 1, 1, 1}
	ptr := func(x []float32) cuda.DevPtr {
		p, err := drv.MemAlloc(4 * len(x))
		if err != nil {
			t.Fatal(err)
		}
		if err := drv.MemcpyHtoD(p, f32bytes(x)); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pa, pb, pc := ptr(a), ptr(b), ptr(c)
	g := cuda.Gemm{TransA: cuda.OpN, TransB: cuda.OpN, M: 2, N: 2, K: 3, Alpha: 2, Beta: 1,
		A: pa, LDA: 2, B: pb, LDB: 3, C: pc, LDC: 2, Batch: 1}
	if err := blas.Sgemm(h, g); err != nil {
		t.Fatal(err)
	}
	if err := drv.MemcpyDtoH(f32bytes(c), pc); err != nil {
		t.Fatal(err)
	}
	if want := []float32{9, 21, 11, 23}; !slices.Equal(c, want) {
		t.Errorf("Sgemm: C = %v, want %v", c, want)
	}
	g.Beta = 0 // overwrite: A·B·2 = [[8 10] [20 22]]
	if err := blas.SgemmStridedBatched(h, g); err != nil {
		t.Fatal(err)
	}
	if err := drv.MemcpyDtoH(f32bytes(c), pc); err != nil {
		t.Fatal(err)
	}
	if want := []float32{8, 20, 10, 22}; !slices.Equal(c, want) {
		t.Errorf("SgemmStridedBatched: C = %v, want %v", c, want)
	}
	g.LDA = 1 // < m: cuBLAS refuses it
	err := blas.Sgemm(h, g)
	var ce *cuda.Error
	if !errors.As(err, &ce) || ce.Code != cuda.BLASStatusInvalidValue || !strings.Contains(err.Error(), "cublasSgemm_v2: CUBLAS_STATUS_INVALID_VALUE") {
		t.Errorf("lda 1: %v", err)
	}
	for _, p := range []cuda.DevPtr{pa, pb, pc} {
		if err := drv.MemFree(p); err != nil {
			t.Error(err)
		}
	}
}

// currentContext initializes drv and makes device 0's primary context
// current, released when the test ends (after the test's own defers).
func currentContext(t *testing.T, drv cuda.Driver) {
	t.Helper()
	if err := drv.Init(); err != nil {
		t.Fatal(err)
	}
	ctx, err := drv.PrimaryCtxRetain(0)
	if err != nil {
		t.Fatal(err)
	}
	if err := drv.CtxSetCurrent(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { drv.PrimaryCtxRelease(0) })
}

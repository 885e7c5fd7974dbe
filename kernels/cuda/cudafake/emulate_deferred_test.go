package cudafake

import (
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/hone-rl/hone/kernels/cuda"
)

// TestEmulatingLibsDeferred loads the emulating libcuda and the stand-in
// libcublas through the real loader with HONE_FAKE_CUDA_DEFERRED set, and
// checks the deferred mode's rules through the C libraries as deferred.go
// states them: a cublasSgemm into managed memory returns with the memory
// as it was (the host sees the 0xff fill), cuCtxSynchronize runs it; a
// queued product comes before a later memset of managed memory (which
// waits for it, then sets); a memset of device memory is queued and runs
// before a cuMemcpyDtoH that follows it; events read the stream's clock
// when their record runs; a launch past the device's grid or block limits
// is refused at the call.
func TestEmulatingLibsDeferred(t *testing.T) {
	cc, cxx := os.Getenv("CC"), os.Getenv("CXX")
	if cc == "" {
		cc = "gcc" // as cgo
	}
	if cxx == "" {
		cxx = "g++"
	}
	libs, err := BuildEmulatingLibs(context.Background(), cc, cxx, "..", t.TempDir())
	if errors.Is(err, exec.ErrNotFound) && os.Getenv("CI") == "" {
		t.Skipf("no compiler for the emulating CUDA libraries: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HONE_FAKE_CUDA_DEFERRED", libs.Driver) // read by cuInit and cublasCreate_v2
	drv, err := cuda.LoadDriver(libs.Driver)
	if err != nil {
		t.Fatal(err)
	}
	blas, err := cuda.LoadBLAS(libs.BLAS)
	if err != nil {
		t.Fatal(err)
	}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must("cuInit", drv.Init())
	dev, err := drv.DeviceGet(0)
	must("cuDeviceGet", err)
	ctx, err := drv.PrimaryCtxRetain(dev)
	must("cuDevicePrimaryCtxRetain", err)
	must("cuCtxSetCurrent", drv.CtxSetCurrent(ctx))
	h, err := blas.Create()
	must("cublasCreate_v2", err)
	host := func(p cuda.DevPtr) *[4]float32 { // managed memory is host memory
		return (*[4]float32)(*(*unsafe.Pointer)(unsafe.Pointer(&p)))
	}
	var ptrs [3]cuda.DevPtr
	for i := range ptrs {
		ptrs[i], err = drv.MemAllocManaged(16)
		must("cuMemAllocManaged", err)
	}
	a, b, c := ptrs[0], ptrs[1], ptrs[2]
	*host(a) = [4]float32{1, 2, 3, 4} // column-major 2×2
	*host(b) = [4]float32{1, 0, 0, 2}
	gemm := cuda.Gemm{M: 2, N: 2, K: 2, Alpha: 1, A: a, LDA: 2, B: b, LDB: 2, C: c, LDC: 2}
	must("cublasSgemm_v2", blas.Sgemm(h, gemm))
	if v := math.Float32bits(host(c)[0]); v != 0xffffffff {
		t.Errorf("C[0] is %#x right after cublasSgemm_v2, want the 0xff fill (the product queued)", v)
	}
	must("cuCtxSynchronize", drv.CtxSynchronize())
	if got, want := *host(c), [4]float32{1, 2, 6, 8}; got != want {
		t.Errorf("C after cuCtxSynchronize = %v, want %v", got, want)
	}
	// A queued product, then a memset of managed memory: the memset waits
	// for the product and sets after it.
	gemm.Beta = 1
	must("cublasSgemm_v2", blas.Sgemm(h, gemm))
	must("cuMemsetD32_v2", drv.MemsetD32(c, math.Float32bits(5), 4))
	must("cuCtxSynchronize", drv.CtxSynchronize()) // nothing left queued to run over the memset
	if got, want := *host(c), [4]float32{5, 5, 5, 5}; got != want {
		t.Errorf("C after a queued product and a managed memset = %v, want %v", got, want)
	}
	// A memset of device memory is queued; cuMemcpyDtoH runs it first.
	d, err := drv.MemAlloc(16)
	must("cuMemAlloc_v2", err)
	must("cuMemsetD32_v2", drv.MemsetD32(d, math.Float32bits(3), 4))
	must("cuMemcpyDtoH_v2", drv.MemcpyDtoH(unsafe.Slice((*byte)(unsafe.Pointer(host(a))), 16), d))
	if got, want := *host(a), [4]float32{3, 3, 3, 3}; got != want {
		t.Errorf("a device memset read back by cuMemcpyDtoH = %v, want %v", got, want)
	}
	// Events: a record queues and reads the clock when it runs, after the
	// clock step queued before it (hone_fake_cuda_advance, as the stand-in
	// cuBLASLt's products step it); cuEventElapsedTime of a pending event
	// is CUDA_ERROR_NOT_READY until cuEventSynchronize runs the queue.
	lib, err := purego.Dlopen(libs.Driver, purego.RTLD_NOW|purego.RTLD_LOCAL)
	must("dlopen", err)
	var advance func(ms float64) int32
	purego.RegisterLibFunc(&advance, lib, "hone_fake_cuda_advance")
	start, err := drv.EventCreate()
	must("cuEventCreate", err)
	end, err := drv.EventCreate()
	must("cuEventCreate", err)
	must("cuEventRecord", drv.EventRecord(start))
	if advance(2.5) != 0 {
		t.Fatal("hone_fake_cuda_advance failed")
	}
	must("cuEventRecord", drv.EventRecord(end))
	_, err = drv.EventElapsedTime(start, end)
	wantCode(t, "cuEventElapsedTime before a synchronization", err, "CUDA_ERROR_NOT_READY")
	must("cuEventSynchronize", drv.EventSynchronize(end))
	if ms, err := drv.EventElapsedTime(start, end); err != nil || ms != 2.5 {
		t.Errorf("elapsed %v ms (%v), want 2.5", ms, err)
	}
	must("cuEventDestroy_v2", drv.EventDestroy(start))
	must("cuEventDestroy_v2", drv.EventDestroy(end))
	if err := drv.EventRecord(start); err == nil {
		t.Error("a destroyed event recorded")
	}
	launchLimits(t, drv, d)
	must("cuMemFree_v2", drv.MemFree(d))
	for _, p := range ptrs {
		must("cuMemFree_v2", drv.MemFree(p))
	}
	must("cublasDestroy_v2", blas.Destroy(h))
	must("cuDevicePrimaryCtxRelease", drv.PrimaryCtxRelease(dev))
}

// launchLimits: a launch past a device's geometry is refused at the call,
// as the driver refuses it (CUDA_ERROR_INVALID_VALUE), not queued to run;
// d is device memory of at least one float.
func launchLimits(t *testing.T, drv cuda.Driver, d cuda.DevPtr) {
	t.Helper()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	ptx, err := cuda.PTX("misc", 90)
	must("PTX", err)
	mod, err := drv.ModuleLoadData(append(ptx[:len(ptx):len(ptx)], 0))
	must("cuModuleLoadData", err)
	zero, err := drv.ModuleGetFunction(mod, "zero_f32")
	must("cuModuleGetFunction", err)
	n := int32(0)
	params := []unsafe.Pointer{unsafe.Pointer(&d), unsafe.Pointer(&n)}
	one := cuda.Dim3{X: 1, Y: 1, Z: 1}
	for _, c := range []struct {
		name        string
		grid, block cuda.Dim3
	}{
		{"grid.y 70000", cuda.Dim3{X: 1, Y: 70000, Z: 1}, one},
		{"grid.z 65536", cuda.Dim3{X: 1, Y: 1, Z: 65536}, one},
		{"block.z 128", one, cuda.Dim3{X: 1, Y: 1, Z: 128}},
	} {
		wantCode(t, c.name, drv.LaunchKernel(zero, c.grid, c.block, 0, params), "CUDA_ERROR_INVALID_VALUE")
	}
	must("cuCtxSynchronize", drv.CtxSynchronize())
	must("cuModuleUnload", drv.ModuleUnload(mod))
}

package cuda_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/cudafake"
)

// TestBufferBookkeeping: the device counts what is allocated, refuses a
// buffer used or freed after Free and a copy of the wrong length, and Close
// frees what was leaked and says so; the driver ends with no allocation, no
// retained context and no cuBLAS handle.
func TestBufferBookkeeping(t *testing.T) {
	dev, drv, blas := openFake(t, 0)
	bufs := make([]*cuda.Buffer, 3)
	for i, n := range []int{5, 64, 1000} {
		b, err := dev.Alloc(n)
		if err != nil {
			t.Fatal(err)
		}
		bufs[i] = b
	}
	if n, bytes := dev.Live(); n != 3 || bytes != 4*(5+64+1000) {
		t.Errorf("Live() = %d buffers, %d bytes; want 3, %d", n, bytes, 4*(5+64+1000))
	}
	x := []float32{1, 2, 3, 4, 5}
	if err := bufs[0].Upload(x); err != nil {
		t.Fatal(err)
	}
	if got := download(t, bufs[0]); !equal(got, x) {
		t.Errorf("round trip: %v, want %v", got, x)
	}
	if err := bufs[0].Upload(x[:4]); err == nil || !strings.Contains(err.Error(), "4 values into a buffer of 5") {
		t.Errorf("short upload: %v", err)
	}
	if err := bufs[0].Download(make([]float32, 6)); err == nil || !strings.Contains(err.Error(), "a buffer of 5 into 6 values") {
		t.Errorf("long download: %v", err)
	}
	if err := bufs[0].Free(); err != nil {
		t.Fatal(err)
	}
	for what, err := range map[string]error{
		"second Free":         bufs[0].Free(),
		"Upload after Free":   bufs[0].Upload(x),
		"Download after Free": bufs[0].Download(x),
	} {
		if err == nil || !strings.Contains(err.Error(), "used after Free") {
			t.Errorf("%s: %v", what, err)
		}
	}
	if n, _ := drv.Live(); n != 2 {
		t.Errorf("fake driver has %d allocations, want 2", n)
	}
	if _, err := dev.Alloc(0); err == nil {
		t.Error("Alloc(0) succeeded")
	}

	err := dev.Close()
	if err == nil || !strings.Contains(err.Error(), "closed with 2 buffers (4256 bytes) not freed") {
		t.Errorf("Close with leaks: %v", err)
	}
	if n, bytes := drv.Live(); n != 0 || bytes != 0 {
		t.Errorf("after Close the fake driver has %d allocations (%d bytes)", n, bytes)
	}
	if drv.Retained(0) != 0 || blas.Handles() != 0 {
		t.Errorf("after Close: context retained %d times, %d cuBLAS handles", drv.Retained(0), blas.Handles())
	}
	if _, err := dev.Alloc(1); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Alloc after Close: %v", err)
	}
	if err := dev.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func equal(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// cudaError returns err's *cuda.Error, failing t when there is none or its
// name is not name.
func cudaError(t *testing.T, what string, err error, name string) {
	t.Helper()
	var ce *cuda.Error
	if !errors.As(err, &ce) || ce.Name != name {
		t.Errorf("%s: %v, want a %s", what, err, name)
	}
}

// TestDeviceErrorPaths: driver and cuBLAS failures come back as errors
// naming the operation and the CUDA error, leave the bookkeeping as it was,
// and a failed Open releases what it took.
func TestDeviceErrorPaths(t *testing.T) {
	dev, drv, fb := openFake(t, 1000)
	defer dev.Close()
	_, err := dev.Alloc(300) // 1200 bytes > 1000
	cudaError(t, "Alloc past the memory", err, "CUDA_ERROR_OUT_OF_MEMORY")
	if err == nil || !strings.HasPrefix(err.Error(), "CUDA Alloc of 300 floats: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY") {
		t.Errorf("message %q", err)
	}
	if n, _ := dev.Live(); n != 0 {
		t.Errorf("a failed Alloc is counted: %d live", n)
	}
	b, err := dev.Alloc(10)
	if err != nil {
		t.Fatal(err)
	}
	drv.FailNext("cuMemcpyHtoD_v2", 1)
	cudaError(t, "Upload", b.Upload(make([]float32, 10)), "CUDA_ERROR_INVALID_VALUE")
	drv.FailNext("cuMemFree_v2", 1)
	cudaError(t, "Free", b.Free(), "CUDA_ERROR_INVALID_VALUE")
	if n, _ := dev.Live(); n != 1 {
		t.Errorf("a failed Free is not counted as live: %d live", n)
	}
	if err := b.Free(); err != nil {
		t.Errorf("Free after a failed Free: %v", err)
	}

	// cuBLAS fails a call: the error names the Matmul and the status.
	c, err := dev.Alloc(4)
	if err != nil {
		t.Fatal(err)
	}
	fb.FailNext("cublasSgemmStridedBatched", 13)
	err = dev.MatmulBatched(c, c, c, 1, 2, 2, 1, false, false, 0)
	cudaError(t, "MatmulBatched", err, "CUBLAS_STATUS_EXECUTION_FAILED")
	if err == nil || !strings.HasPrefix(err.Error(), "CUDA MatmulBatched batch=1 M=2 N=2 K=1: cublasSgemmStridedBatched: CUBLAS_STATUS_EXECUTION_FAILED") {
		t.Errorf("message %q", err)
	}
	other, _, _ := openFake(t, 0)
	defer other.Close()
	o, err := other.Alloc(4)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Free()
	if err := dev.Matmul(c, c, o, 2, 2, 2, false, false, 0); err == nil || !strings.Contains(err.Error(), "another device") {
		t.Errorf("buffer of another device: %v", err)
	}
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(r.(string), "kernels.Matmul: c has 4 elements, shape needs 9") {
				t.Errorf("short c: panic %v", r)
			}
		}()
		_ = dev.Matmul(c, c, c, 3, 3, 1, false, false, 0)
	}()
	if err := c.Free(); err != nil {
		t.Fatal(err)
	}
	if err := dev.Matmul(c, c, c, 2, 2, 2, false, false, 0); err == nil || !strings.Contains(err.Error(), "used after Free") {
		t.Errorf("Matmul on a freed buffer: %v", err)
	}
}

// TestOpenWithErrors: a driver without devices, a device number past the
// last, and a failing cuInit or cuBLAS handle; the failed Open leaves the
// primary context released.
func TestOpenWithErrors(t *testing.T) {
	drv := cudafake.NewDriver(0, 0)
	_, err := cuda.OpenWith(drv, cudafake.NewBLAS(drv), 0)
	asMissing(t, err, "CUDA device")
	drv = cudafake.NewDriver(2, 0)
	_, err = cuda.OpenWith(drv, cudafake.NewBLAS(drv), 2)
	asMissing(t, err, "CUDA device")

	drv.FailNext("cuInit", 3)
	_, err = cuda.OpenWith(drv, cudafake.NewBLAS(drv), 0)
	var m *cuda.MissingError
	if errors.As(err, &m) {
		t.Errorf("a failing cuInit is reported as missing: %v", err)
	}
	cudaError(t, "cuInit", err, "CUDA_ERROR_NOT_INITIALIZED")

	drv.FailNext("cuCtxSetCurrent", 201)
	_, err = cuda.OpenWith(drv, cudafake.NewBLAS(drv), 1)
	cudaError(t, "cuCtxSetCurrent", err, "CUDA_ERROR_INVALID_CONTEXT")
	if drv.Retained(1) != 0 {
		t.Errorf("failed Open left the context retained %d times", drv.Retained(1))
	}
}

// TestBufferFreedAddressReused: the driver hands a freed address out again
// (the fake does, as a GPU's allocator does), and a handle kept past its
// Free still fails as used after Free instead of reaching the allocation
// now at its address: a second Free does not free the new buffer, an
// Upload does not overwrite it, a Download does not read it, nor a GEMM
// either.
func TestBufferFreedAddressReused(t *testing.T) {
	dev, drv, _ := openFake(t, 0)
	defer dev.Close()
	old, err := dev.Alloc(4)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Free(); err != nil {
		t.Fatal(err)
	}
	cur, err := dev.Alloc(4)
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{1, 2, 3, 4}
	if err := cur.Upload(want); err != nil {
		t.Fatal(err)
	}
	for what, err := range map[string]error{
		"Upload":   old.Upload([]float32{9, 9, 9, 9}),
		"Download": old.Download(make([]float32, 4)),
		"Matmul":   dev.Matmul(old, cur, cur, 2, 2, 2, false, false, 0),
		"Free":     old.Free(),
	} {
		if err == nil || !strings.Contains(err.Error(), "used after Free") {
			t.Errorf("%s of a freed buffer whose address is in use again: %v, want used after Free", what, err)
		}
	}
	if n, _ := drv.Live(); n != 1 {
		t.Errorf("the driver holds %d allocations, want 1 (the second buffer)", n)
	}
	if got := download(t, cur); !equal(got, want) {
		t.Errorf("the buffer at the reused address holds %v, want %v", got, want)
	}
	if err := cur.Free(); err != nil {
		t.Errorf("Free of the buffer at the reused address: %v", err)
	}
}

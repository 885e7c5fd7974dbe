package cudafake

import (
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/hone-rl/hone/kernels/cuda"
)

func wantCode(t *testing.T, what string, err error, name string) {
	t.Helper()
	var ce *cuda.Error
	if !errors.As(err, &ce) || ce.Name != name {
		t.Errorf("%s: %v, want %s", what, err, name)
	}
}

// ready returns a fake driver after cuInit with device 0's context current.
func ready(t *testing.T) *Driver {
	t.Helper()
	d := NewDriver(1, 0, "rmsnorm")
	wantCode(t, "alloc before cuInit", func() error { _, err := d.MemAlloc(4); return err }(), "CUDA_ERROR_NOT_INITIALIZED")
	if err := d.Init(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "alloc without a context", func() error { _, err := d.MemAlloc(4); return err }(), "CUDA_ERROR_INVALID_CONTEXT")
	ctx, err := d.PrimaryCtxRetain(0)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.CtxSetCurrent(ctx); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestLaunchGeometry: launches within an sm_90 device's limits are
// recorded; past them, or with a kernel the module lacks, refused.
func TestLaunchGeometry(t *testing.T) {
	d := ready(t)
	m, err := d.ModuleLoadData([]byte("// ptx\x00"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.ModuleLoadData([]byte("// ptx")); err == nil {
		t.Error("PTX without its NUL byte loaded")
	}
	_, err = d.ModuleGetFunction(m, "softmax")
	wantCode(t, "unknown kernel", err, "CUDA_ERROR_NOT_FOUND")
	f, err := d.ModuleGetFunction(m, "rmsnorm")
	if err != nil {
		t.Fatal(err)
	}
	one := cuda.Dim3{X: 1, Y: 1, Z: 1}
	x := int32(3)
	params := []unsafe.Pointer{unsafe.Pointer(&x)}
	if err := d.LaunchKernel(f, cuda.Dim3{X: 64, Y: 1, Z: 1}, cuda.Dim3{X: 256, Y: 1, Z: 1}, 1024, params); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		name        string
		grid, block cuda.Dim3
		shared      int
	}{
		{"1025 threads", one, cuda.Dim3{X: 1025, Y: 1, Z: 1}, 0},
		{"32×64 threads", one, cuda.Dim3{X: 32, Y: 64, Z: 1}, 0},
		{"block z 65", one, cuda.Dim3{X: 1, Y: 1, Z: 65}, 0},
		{"grid y 65536", cuda.Dim3{X: 1, Y: 65536, Z: 1}, one, 0},
		{"zero grid", cuda.Dim3{X: 0, Y: 1, Z: 1}, one, 0},
		{"49 KiB shared", one, one, 49 << 10},
	} {
		wantCode(t, bad.name, d.LaunchKernel(f, bad.grid, bad.block, bad.shared, params), "CUDA_ERROR_INVALID_VALUE")
	}
	want := Launch{Kernel: "rmsnorm", Grid: cuda.Dim3{X: 64, Y: 1, Z: 1}, Block: cuda.Dim3{X: 256, Y: 1, Z: 1}, SharedBytes: 1024, Params: 1}
	if got := d.Launches(); len(got) != 1 || got[0] != want {
		t.Errorf("launches %+v, want [%+v]", got, want)
	}
}

// TestMemoryBounds: a copy must lie inside one allocation, even when the
// bytes past its end are another allocation's; freeing an unknown pointer
// fails.
func TestMemoryBounds(t *testing.T) {
	d := ready(t)
	p, err := d.MemAlloc(16)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.MemAlloc(16); err != nil {
		t.Fatal(err)
	}
	if err := d.MemcpyHtoD(p+8, make([]byte, 8)); err != nil {
		t.Errorf("copy into the second half: %v", err)
	}
	wantCode(t, "copy past the end", d.MemcpyHtoD(p+8, make([]byte, 9)), "CUDA_ERROR_INVALID_VALUE")
	wantCode(t, "copy before the start", d.MemcpyDtoH(make([]byte, 4), p-4), "CUDA_ERROR_INVALID_VALUE")
	wantCode(t, "free inside", d.MemFree(p+4), "CUDA_ERROR_INVALID_VALUE")
	if err := d.MemFree(p); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "double free", d.MemFree(p), "CUDA_ERROR_INVALID_VALUE")
	if n, bytes := d.Live(); n != 1 || bytes != 16 {
		t.Errorf("Live() = %d, %d; want 1, 16", n, bytes)
	}
}

// TestDynamicShared: past 48 KiB, a launch's dynamic shared memory needs
// the kernel's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, which
// cannot exceed the device's opt-in limit (cuDeviceGetAttribute 97); the
// refusals name the kernel and the bytes.
func TestDynamicShared(t *testing.T) {
	d := ready(t)
	d.SetSharedOptin(100 << 10)
	if v, err := d.DeviceAttribute(0, cuda.DeviceAttrSharedOptin); err != nil || v != 100<<10 {
		t.Errorf("the opt-in limit: %d, %v; want %d", v, err, 100<<10)
	}
	m, err := d.ModuleLoadData([]byte("// ptx\x00"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := d.ModuleGetFunction(m, "rmsnorm")
	if err != nil {
		t.Fatal(err)
	}
	one := cuda.Dim3{X: 1, Y: 1, Z: 1}
	launch := func(bytes int) error { return d.LaunchKernel(f, one, one, bytes, nil) }
	if err := launch(48 << 10); err != nil {
		t.Errorf("48 KiB without opting in: %v", err)
	}
	err = launch(64 << 10)
	wantCode(t, "64 KiB without opting in", err, "CUDA_ERROR_INVALID_VALUE")
	if err == nil || !strings.Contains(err.Error(), "rmsnorm: 65536 bytes of dynamic shared memory, more than the 49152") {
		t.Errorf("64 KiB without opting in: %v, want it to name the kernel and the bytes", err)
	}
	wantCode(t, "opting in past the device's limit", d.FuncSetAttribute(f, cuda.FuncAttrMaxDynamicShared, 100<<10+1), "CUDA_ERROR_INVALID_VALUE")
	wantCode(t, "another attribute", d.FuncSetAttribute(f, 9, 0), "CUDA_ERROR_INVALID_VALUE")
	if err := d.FuncSetAttribute(f, cuda.FuncAttrMaxDynamicShared, 68<<10); err != nil {
		t.Fatal(err)
	}
	if err := launch(68 << 10); err != nil {
		t.Errorf("68 KiB opted in to 68 KiB: %v", err)
	}
	err = launch(68<<10 + 16)
	if err == nil || !strings.Contains(err.Error(), "rmsnorm: 69648 bytes of dynamic shared memory, more than the 69632") {
		t.Errorf("past the 68 KiB opted in to: %v, want it to name the kernel and the bytes", err)
	}
	got := d.Launches()
	if len(got) != 2 || got[0].SharedBytes != 48<<10 || got[1].SharedBytes != 68<<10 {
		t.Errorf("launches %+v, want those of 48 and 68 KiB", got)
	}
}

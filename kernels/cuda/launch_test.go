package cuda_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/cudafake"
)

// TestLaunchThroughLoader launches the C stand-in's fill(p, v, n) kernel
// through the real loader and purego: a *Buffer, a float32 and an int reach
// the kernel as its parameters, and the grid bounds what it writes.
func TestLaunchThroughLoader(t *testing.T) {
	libs := fakeLibs(t)
	dev, err := cuda.Open(cuda.Options{DriverLib: libs.Driver, BLASLib: libs.BLAS})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	mod, err := dev.LoadModule([]byte("//fake module, no NUL byte"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mod.Kernel("nope"); err == nil || !strings.Contains(err.Error(), `CUDA kernel "nope": cuModuleGetFunction: CUDA_ERROR_NOT_FOUND`) {
		t.Errorf("unknown kernel: %v", err)
	}
	fill, err := mod.Kernel("fill")
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 30)
	buf := upload(t, dev, x)
	defer buf.Free()
	// 2 blocks of 8 threads cover 16 of the 20 elements asked for.
	if err := fill.Launch(cuda.Dim3{X: 2, Y: 1, Z: 1}, cuda.Dim3{X: 8, Y: 1, Z: 1}, 0, buf, float32(7), 20); err != nil {
		t.Fatal(err)
	}
	// 68 KiB of dynamic shared memory: Launch opts the kernel in through
	// cuDeviceGetAttribute and cuFuncSetAttribute, bound by the loader.
	if err := fill.Launch(cuda.Dim3{X: 2, Y: 1, Z: 1}, cuda.Dim3{X: 8, Y: 1, Z: 1}, 68<<10, buf, float32(7), 20); err != nil {
		t.Fatal(err)
	}
	got := download(t, buf)
	for i, v := range got {
		if want := map[bool]float32{true: 7, false: 0}[i < 16]; v != want {
			t.Fatalf("element %d = %v after fill, want %v", i, v, want)
		}
	}
	if err := fill.Launch(cuda.Dim3{X: 1, Y: 1, Z: 1}, cuda.Dim3{X: 8, Y: 1, Z: 1}, 228<<10, buf, float32(7), 20); err == nil ||
		!strings.Contains(err.Error(), "CUDA launch of fill: 233472 bytes of dynamic shared memory asked, more than the 232448 bytes") {
		t.Errorf("past the device's opt-in limit: %v", err)
	}
	if err := mod.Unload(); err != nil {
		t.Fatal(err)
	}
}

// TestLaunchChecks: Launch refuses bad geometry before the driver sees it,
// arguments that are no kernel parameter, buffers freed or of another
// device, and kernels of an unloaded module; the fake driver records the
// launches that pass; Close unloads the modules left loaded.
func TestLaunchChecks(t *testing.T) {
	drv := cudafake.NewDriver(1, 0, "rmsnorm_forward")
	dev, err := cuda.OpenWith(drv, cudafake.NewBLAS(drv), 0)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := dev.LoadModule([]byte(".version 7.8\n"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := mod.Kernel("rmsnorm_forward")
	if err != nil {
		t.Fatal(err)
	}
	buf, err := dev.Alloc(4)
	if err != nil {
		t.Fatal(err)
	}
	other, _, _ := openFake(t, 0)
	defer other.Close()
	foreign, err := other.Alloc(4)
	if err != nil {
		t.Fatal(err)
	}
	defer foreign.Free()
	one, warp := cuda.Dim3{X: 1, Y: 1, Z: 1}, cuda.Dim3{X: 32, Y: 1, Z: 1}
	for _, c := range []struct {
		name        string
		grid, block cuda.Dim3
		args        []any
		says        string
	}{
		{"1025 threads", one, cuda.Dim3{X: 1025, Y: 1, Z: 1}, nil, "at most 1024 threads"},
		{"zero grid", cuda.Dim3{X: 0, Y: 1, Z: 1}, warp, nil, "every dimension ≥ 1"},
		{"grid.y past 65535", cuda.Dim3{X: 1, Y: 70000, Z: 1}, warp, nil, "grid.y and grid.z at most 65535"},
		{"grid.z past 65535", cuda.Dim3{X: 1, Y: 1, Z: 65536}, warp, nil, "grid.y and grid.z at most 65535"},
		{"grid.x past 2³¹−1", cuda.Dim3{X: 1 << 31, Y: 1, Z: 1}, warp, nil, "grid.x at most 2³¹−1"},
		{"block.z past 64", one, cuda.Dim3{X: 1, Y: 1, Z: 128}, nil, "block.z at most 64"},
		{"float64", one, warp, []any{buf, 1.5}, "argument 1: a float64 is not a kernel parameter"},
		{"int past int32", one, warp, []any{1 << 40}, "argument 0: 1099511627776 does not fit an int"},
		{"foreign buffer", one, warp, []any{foreign}, "argument 0: a buffer of another device"},
	} {
		if err := k.Launch(c.grid, c.block, 0, c.args...); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want it to say %q", c.name, err, c.says)
		}
	}
	if err := k.Launch(cuda.Dim3{X: 7, Y: 1, Z: 1}, cuda.Dim3{X: 256, Y: 1, Z: 1}, 0, buf, buf, int32(3), float32(1e-6)); err != nil {
		t.Fatal(err)
	}
	want := cudafake.Launch{Kernel: "rmsnorm_forward", Grid: cuda.Dim3{X: 7, Y: 1, Z: 1}, Block: cuda.Dim3{X: 256, Y: 1, Z: 1}, Params: 4}
	if got := drv.Launches(); len(got) != 1 || got[0] != want {
		t.Errorf("the driver saw %+v, want [%+v]", got, want)
	}
	if n := drv.Calls("cuLaunchKernel"); n != 1 {
		t.Errorf("cuLaunchKernel called %d times, want 1: the refused launches reached the driver", n)
	}
	if err := buf.Free(); err != nil {
		t.Fatal(err)
	}
	if err := k.Launch(one, warp, 0, buf); err == nil || !strings.Contains(err.Error(), "used after Free") {
		t.Errorf("freed buffer: %v", err)
	}
	if _, err := dev.LoadModule([]byte("// a second module")); err != nil {
		t.Fatal(err)
	}
	if err := mod.Unload(); err != nil {
		t.Fatal(err)
	}
	if err := k.Launch(one, warp, 0); err == nil || !strings.Contains(err.Error(), "module was unloaded") {
		t.Errorf("after Unload: %v", err)
	}
	if drv.Modules() != 1 {
		t.Errorf("%d modules loaded, want 1", drv.Modules())
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	if drv.Modules() != 0 {
		t.Errorf("Close left %d modules loaded", drv.Modules())
	}
}

// TestLaunchDynamicShared: a launch with more than 48 KiB of dynamic shared
// memory sets its kernel's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
// first, once per kernel (again when a launch asks for more), and fails,
// naming the kernel, the bytes and the device's limit, when the device
// cannot give them; the driver sees each launch's bytes.
func TestLaunchDynamicShared(t *testing.T) {
	drv := cudafake.NewDriver(1, 0, "attention_mma_forward_k64", "rmsnorm_forward")
	drv.SetSharedOptin(96 << 10)
	dev, err := cuda.OpenWith(drv, cudafake.NewBLAS(drv), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	mod, err := dev.LoadModule([]byte(".version 7.8\n"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := mod.Kernel("attention_mma_forward_k64")
	if err != nil {
		t.Fatal(err)
	}
	other, err := mod.Kernel("rmsnorm_forward")
	if err != nil {
		t.Fatal(err)
	}
	one := cuda.Dim3{X: 1, Y: 1, Z: 1}
	for i, bytes := range []int{48 << 10, 68 << 10, 68 << 10, 64 << 10, 80 << 10} {
		if err := k.Launch(one, one, bytes); err != nil {
			t.Fatalf("launch %d, %d bytes: %v", i, bytes, err)
		}
	}
	if n := drv.Calls("cuFuncSetAttribute"); n != 2 {
		t.Errorf("cuFuncSetAttribute called %d times for launches of 48, 68, 68, 64 and 80 KiB, want 2 (68 and 80 KiB)", n)
	}
	if n := drv.Calls("cuDeviceGetAttribute"); n != 2 {
		t.Errorf("cuDeviceGetAttribute called %d times, want 2 (the compute capability at Open, the opt-in limit once)", n)
	}
	err = k.Launch(one, one, 97<<10)
	if err == nil || !strings.Contains(err.Error(), "CUDA launch of attention_mma_forward_k64: 99328 bytes of dynamic shared memory asked, more than the 98304 bytes a block of this device can opt in to") {
		t.Errorf("past the opt-in limit: %v", err)
	}
	drv.FailNext("cuFuncSetAttribute", 1)
	err = other.Launch(one, one, 50<<10)
	if err == nil || !strings.Contains(err.Error(), "CUDA launch of rmsnorm_forward: opting in to 51200 bytes of dynamic shared memory: cuFuncSetAttribute") {
		t.Errorf("a refused opt-in: %v", err)
	}
	if err := other.Launch(one, one, 50<<10); err != nil {
		t.Errorf("the opt-in retried: %v", err)
	}
	var bytes []int
	for _, l := range drv.Launches() {
		bytes = append(bytes, l.SharedBytes)
	}
	if want := []int{48 << 10, 68 << 10, 68 << 10, 64 << 10, 80 << 10, 50 << 10}; !slices.Equal(bytes, want) {
		t.Errorf("the driver saw launches of %v bytes, want %v", bytes, want)
	}
}

// TestLaunchLimitsThroughLoader: the C stand-in for libcuda refuses, as
// the driver does (CUDA_ERROR_INVALID_VALUE), a launch past a device's
// geometry — grid.y or grid.z past 65535, block.z past 64, a block whose
// thread count wraps in 32 bits — which Launch refuses before it and a
// caller of the Driver binding could still make; it took them all.
func TestLaunchLimitsThroughLoader(t *testing.T) {
	libs := fakeLibs(t)
	drv, err := cuda.LoadDriver(libs.Driver)
	if err != nil {
		t.Fatal(err)
	}
	if err := drv.Init(); err != nil {
		t.Fatal(err)
	}
	ctx, err := drv.PrimaryCtxRetain(0)
	if err != nil {
		t.Fatal(err)
	}
	defer drv.PrimaryCtxRelease(0)
	if err := drv.CtxSetCurrent(ctx); err != nil {
		t.Fatal(err)
	}
	m, err := drv.ModuleLoadData([]byte("//fake\x00"))
	if err != nil {
		t.Fatal(err)
	}
	defer drv.ModuleUnload(m)
	f, err := drv.ModuleGetFunction(m, "fill")
	if err != nil {
		t.Fatal(err)
	}
	p, err := drv.MemAlloc(4)
	if err != nil {
		t.Fatal(err)
	}
	defer drv.MemFree(p)
	v, n := float32(1), int32(0) // fill nothing, whatever the grid
	params := []unsafe.Pointer{unsafe.Pointer(&p), unsafe.Pointer(&v), unsafe.Pointer(&n)}
	one := cuda.Dim3{X: 1, Y: 1, Z: 1}
	if err := drv.LaunchKernel(f, one, one, 0, params); err != nil {
		t.Fatalf("a launch within the limits: %v", err)
	}
	for _, c := range []struct {
		name        string
		grid, block cuda.Dim3
	}{
		{"grid.y 70000", cuda.Dim3{X: 1, Y: 70000, Z: 1}, one},
		{"grid.z 65536", cuda.Dim3{X: 1, Y: 1, Z: 65536}, one},
		{"block.z 128", one, cuda.Dim3{X: 1, Y: 1, Z: 128}},
		{"block.y 0", one, cuda.Dim3{X: 1, Y: 0, Z: 1}},
		{"block 65536×65536", one, cuda.Dim3{X: 65536, Y: 65536, Z: 1}},
	} {
		err := drv.LaunchKernel(f, c.grid, c.block, 0, params)
		var ce *cuda.Error
		if !errors.As(err, &ce) || ce.Name != "CUDA_ERROR_INVALID_VALUE" {
			t.Errorf("%s: %v, want CUDA_ERROR_INVALID_VALUE", c.name, err)
		}
	}
}

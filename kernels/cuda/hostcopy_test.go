package cuda_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/cudafake"
)

// TestBackendCopyToHost: on the emulated device, CopyToHost moves a view
// of an allocation into Go memory through cuMemcpyDtoH_v2 (a failure the
// fake driver injects there panics naming the op and the driver's error,
// so the copy is the driver's, not a host read), counts as an op in a
// profile, and refuses a destination in the backend's memory however it
// overlaps. kerneltest's CopyToHost group (conformanceGroups) checks the
// values.
func TestBackendCopyToHost(t *testing.T) {
	b, drv, _ := emulatedBackend(t)
	defer b.Close()
	x, err := b.AllocF32(64)
	if err != nil {
		t.Fatal(err)
	}
	defer b.FreeF32(x)
	y, err := b.AllocF32(8)
	if err != nil {
		t.Fatal(err)
	}
	defer b.FreeF32(y)
	for i := range x {
		x[i] = float32(i)
	}
	b.Scale(x, x, 2, len(x)) // written on the device
	b.StartProfile()
	dst := make([]float32, 10)
	b.CopyToHost(dst, x[7:], 9)
	if want := []float32{14, 16, 18, 20, 22, 24, 26, 28, 30, 0}; !slices.Equal(dst, want) {
		t.Errorf("CopyToHost of x[7:16] (2·index): %v, want %v", dst, want)
	}
	if p := b.StopProfile(); len(p) != 1 || p[0].Op != "CopyToHost" || p[0].Calls != 1 {
		t.Errorf("profile %v, want one CopyToHost", p)
	}
	drv.FailNext("cuMemcpyDtoH_v2", 700) // CUDA_ERROR_ILLEGAL_ADDRESS
	msg := catch(func() { b.CopyToHost(dst, x, 4) })
	if !strings.Contains(msg, "kernels.CopyToHost") || !strings.Contains(msg, "cuMemcpyDtoH_v2") {
		t.Errorf("a failed cuMemcpyDtoH_v2: panic %q, want it to name the op and the call", msg)
	}
	for _, c := range []struct {
		name     string
		dst, src []float32
		says     string
	}{
		{"dst another allocation", y, x[:8], "kernels.CopyToHost: dst (8 values"},
		{"dst the source's allocation", x[32:40], x[:8], "kernels.CopyToHost: dst (8 values"},
		{"src Go memory", dst[:4], make([]float32, 4), "kernels.CopyToHost: src (4 values"},
	} {
		if msg := catch(func() { b.CopyToHost(c.dst, c.src, len(c.src)) }); !strings.Contains(msg, c.says) {
			t.Errorf("%s: panic %q, want it to say %q", c.name, msg, c.says)
		}
	}
	// The backend still works after the panics (its lock was released).
	b.CopyToHost(dst, x, 2)
	if dst[0] != 0 || dst[1] != 2 {
		t.Errorf("after the refused copies: %v", dst[:2])
	}
	var _ kernels.HostCopier = b
}

// catch runs f and returns what it panicked with ("" for no panic).
func catch(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}

// TestTimeCopyToHostEmulated runs TestCopyToHostOnHardware's rounds on the
// emulated device at a small size: every way gives the values the device
// wrote, every step is timed, and nothing is left allocated.
func TestTimeCopyToHostEmulated(t *testing.T) {
	b, _, _ := emulatedBackend(t)
	defer b.Close()
	ts := timeCopyToHost(t, b, 3000, 2)
	for w := range ts {
		for i, d := range ts[w] {
			if len(d) != 2 {
				t.Errorf("way %d timing %d: %d rounds timed, want 2", w, i, len(d))
			}
		}
	}
	if n, _ := b.Device().Live(); n > 1 {
		t.Errorf("%d buffers live after the rounds, want the int32 scratch at most", n)
	}
	if err := b.Close(); err != nil {
		t.Errorf("Close after the rounds: %v", err)
	}
}

// TestMemAllocHostThroughLoader calls cuMemAllocHost_v2 and cuMemFreeHost
// of the fake libcuda through the real loader (purego), with a
// cuMemcpyDtoH_v2 from managed memory into the page-locked memory between
// them; the fake counts the allocation as live until it is freed.
func TestMemAllocHostThroughLoader(t *testing.T) {
	libs := fakeLibs(t)
	_, live := fakeHooks(t, libs.Driver)
	drv, err := cuda.LoadDriver(libs.Driver)
	if err != nil {
		t.Fatal(err)
	}
	currentContext(t, drv)
	src, err := drv.MemAllocManaged(4 * 6)
	if err != nil {
		t.Fatal(err)
	}
	defer drv.MemFree(src)
	if err := drv.MemsetD32(src, 0x40000000, 6); err != nil { // 2.0
		t.Fatal(err)
	}
	p, err := drv.MemAllocHost(4 * 6)
	if err != nil {
		t.Fatal(err)
	}
	if n := live(); n != 2 {
		t.Errorf("%d live allocations with the managed and the page-locked one, want 2", n)
	}
	host := unsafe.Slice((*float32)(p), 6)
	if err := drv.MemcpyDtoH(f32bytes(host), src); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(host, []float32{2, 2, 2, 2, 2, 2}) {
		t.Errorf("page-locked memory after cuMemcpyDtoH of 2.0: %v", host)
	}
	if err := drv.MemFreeHost(p); err != nil {
		t.Fatal(err)
	}
	if n := live(); n != 1 {
		t.Errorf("%d live allocations after cuMemFreeHost, want the managed one", n)
	}
	if _, err := drv.MemAllocHost(0); err == nil {
		t.Error("cuMemAllocHost_v2 of 0 bytes: no error")
	}
}

// TestFakeMemAllocHost: the Go fake's page-locked memory is real host
// memory, counted apart from device memory, and freeing what it did not
// hand out is CUDA_ERROR_INVALID_VALUE.
func TestFakeMemAllocHost(t *testing.T) {
	drv := cudafake.NewDriver(1, 0)
	currentContext(t, drv)
	if _, err := drv.MemAlloc(4); err != nil {
		t.Fatal(err)
	}
	p, err := drv.MemAllocHost(16)
	if err != nil {
		t.Fatal(err)
	}
	host := unsafe.Slice((*float32)(p), 4)
	host[3] = 7 // writable host memory
	if drv.LiveHost() != 1 {
		t.Errorf("LiveHost %d, want 1", drv.LiveHost())
	}
	if n, _ := drv.Live(); n != 1 {
		t.Errorf("%d device allocations, want the one (page-locked memory apart)", n)
	}
	var x float32
	if err := drv.MemFreeHost(unsafe.Pointer(&x)); err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_INVALID_VALUE") {
		t.Errorf("cuMemFreeHost of Go memory: %v", err)
	}
	if err := drv.MemFreeHost(p); err != nil {
		t.Fatal(err)
	}
	if drv.LiveHost() != 0 {
		t.Errorf("LiveHost %d after the free, want 0", drv.LiveHost())
	}
}

// TestBackendAllocHost: AllocHostF32 hands out zeroed page-locked host
// memory (cuMemAllocHost_v2) that CopyToHost fills and the ops refuse;
// FreeHostF32 releases it (a view or Go memory panics); Close frees what
// is left and says so.
func TestBackendAllocHost(t *testing.T) {
	b, drv, _ := emulatedBackend(t)
	x, err := b.AllocF32(6)
	if err != nil {
		t.Fatal(err)
	}
	for i := range x {
		x[i] = float32(i + 1)
	}
	h, err := b.AllocHostF32(6)
	if err != nil {
		t.Fatal(err)
	}
	if drv.LiveHost() != 1 || !slices.Equal(h, make([]float32, 6)) {
		t.Fatalf("after AllocHostF32: %d page-locked allocations, values %v", drv.LiveHost(), h)
	}
	b.CopyToHost(h, x, 6)
	if !slices.Equal(h, []float32{1, 2, 3, 4, 5, 6}) {
		t.Errorf("CopyToHost into page-locked memory: %v", h)
	}
	if msg := catch(func() { b.Scale(h, x, 2, 6) }); !strings.Contains(msg, "kernels.Scale: out") {
		t.Errorf("page-locked memory as an op's operand: panic %q", msg)
	}
	for _, c := range []struct {
		name string
		s    []float32
	}{{"a view", h[1:]}, {"Go memory", make([]float32, 6)}, {"device memory", x}} {
		if msg := catch(func() { b.FreeHostF32(c.s) }); !strings.Contains(msg, "FreeHostF32") {
			t.Errorf("FreeHostF32 of %s: panic %q", c.name, msg)
		}
	}
	b.FreeHostF32(h)
	b.FreeHostF32(nil)
	if drv.LiveHost() != 0 {
		t.Errorf("%d page-locked allocations after FreeHostF32", drv.LiveHost())
	}
	if _, err := b.AllocHostF32(3); err != nil {
		t.Fatal(err)
	}
	b.FreeF32(x)
	if err := b.Close(); err == nil || !strings.Contains(err.Error(), "1 host allocations (3 values) not freed") {
		t.Errorf("Close with page-locked memory left: %v", err)
	}
	if drv.LiveHost() != 0 {
		t.Errorf("%d page-locked allocations after Close", drv.LiveHost())
	}
	if _, err := b.AllocHostF32(3); err == nil {
		t.Error("AllocHostF32 after Close: no error")
	}
}

// TestBackendUploadBF16: on the emulated device, UploadBF16 writes host
// values into a view of an allocation at an odd offset and of an odd
// length through cuMemcpyHtoD_v2 (a failure the fake driver injects there
// panics naming the op and the call), exactly those values: the
// neighbours on either side keep theirs; and it refuses a destination
// outside the backend's memory, a source inside it and a short source.
// (Its wait for the ops queued before it in the stream-ordered mode is
// not seen here: the fake driver runs each launch as it is made.)
func TestBackendUploadBF16(t *testing.T) {
	b, drv, _ := emulatedBackend(t)
	defer b.Close()
	x, err := b.AllocBF16(9)
	if err != nil {
		t.Fatal(err)
	}
	defer b.FreeBF16(x)
	for i := range x {
		x[i] = 0x7777
	}
	src := []uint16{0x3f80, 0x4000, 0x4040, 0x4080, 0x40a0}
	b.UploadBF16(x[1:6], src)
	if want := []uint16{0x7777, 0x3f80, 0x4000, 0x4040, 0x4080, 0x40a0, 0x7777, 0x7777, 0x7777}; !slices.Equal(x, want) {
		t.Errorf("UploadBF16 into x[1:6]: %#04x, want %#04x", x, want)
	}
	drv.FailNext("cuMemcpyHtoD_v2", 700)
	if msg := catch(func() { b.UploadBF16(x[:2], src[:2]) }); !strings.Contains(msg, "kernels.UploadBF16") || !strings.Contains(msg, "cuMemcpyHtoD_v2") {
		t.Errorf("a failed cuMemcpyHtoD_v2: panic %q, want it to name the op and the call", msg)
	}

	for _, c := range []struct {
		name     string
		dst, src []uint16
		says     string
	}{
		{"dst Go memory", make([]uint16, 4), src[:4], "kernels.UploadBF16: dst (4 values"},
		{"src the backend's memory", x[:2], x[4:6], "kernels.UploadBF16: src (2 values"},
		{"src short", x[:4], src[:3], "UploadBF16"},
	} {
		if msg := catch(func() { b.UploadBF16(c.dst, c.src) }); !strings.Contains(msg, c.says) {
			t.Errorf("%s: panic %q, want it to say %q", c.name, msg, c.says)
		}
	}
	var _ kernels.HostUploader = b
}

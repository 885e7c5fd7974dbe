package cudafake

import (
	"bytes"
	"fmt"
	"sort"
	"sync"
	"unsafe"

	"github.com/hone-rl/hone/kernels/cuda"
)

// The CUresult codes the fake returns, with the driver's names for them.
const (
	errInvalidValue   = 1
	errOutOfMemory    = 2
	errNotInitialized = 3
	errInvalidDevice  = 101
	errInvalidImage   = 200
	errInvalidContext = 201
	errInvalidHandle  = 400
	errNotFound       = 500
)

func codeName(code int) string {
	switch code {
	case errInvalidValue:
		return "CUDA_ERROR_INVALID_VALUE"
	case errOutOfMemory:
		return "CUDA_ERROR_OUT_OF_MEMORY"
	case errNotInitialized:
		return "CUDA_ERROR_NOT_INITIALIZED"
	case cuda.CUDAErrorNoDevice:
		return "CUDA_ERROR_NO_DEVICE"
	case errInvalidDevice:
		return "CUDA_ERROR_INVALID_DEVICE"
	case errInvalidImage:
		return "CUDA_ERROR_INVALID_IMAGE"
	case errInvalidContext:
		return "CUDA_ERROR_INVALID_CONTEXT"
	case errInvalidHandle:
		return "CUDA_ERROR_INVALID_HANDLE"
	case errNotFound:
		return "CUDA_ERROR_NOT_FOUND"
	case errLaunchFailed:
		return "CUDA_ERROR_LAUNCH_FAILED"
	case errNotReady:
		return "CUDA_ERROR_NOT_READY"
	}
	return ""
}

// fail is the *cuda.Error of a failed call; text says what the fake saw.
func fail(call string, code int, text string) error {
	return &cuda.Error{Call: call, Code: code, Name: codeName(code), Text: text}
}

// ptxEntries returns the names of the kernels a PTX image defines: its
// lines `.visible .entry NAME(`. A scan for the line's start rather than a
// regular expression: the fake loads every module's PTX (megabytes) for
// each backend a test opens, and a regexp's match over it took most of
// such a test's time, ten times more under -race.
func ptxEntries(image []byte) []string {
	const start = ".visible .entry "
	var names []string
	for at := 0; ; {
		i := bytes.Index(image[at:], []byte(start))
		if i < 0 {
			return names
		}
		i += at
		at = i + len(start)
		if i > 0 && image[i-1] != '\n' {
			continue
		}
		n := at
		for n < len(image) && (image[n] == '_' || image[n] >= '0' && image[n] <= '9' || image[n]|0x20 >= 'a' && image[n]|0x20 <= 'z') {
			n++
		}
		if n > at && n < len(image) && image[n] == '(' {
			names = append(names, string(image[at:n]))
		}
	}
}

// Launch is one kernel launch the fake recorded.
type Launch struct {
	Kernel      string
	Grid, Block cuda.Dim3
	SharedBytes int
	Params      int
}

// Driver is an in-memory cuda.Driver: device memory is Go memory at fake
// addresses, with gaps between allocations, so that an access outside an
// allocation is an error rather than a read of a neighbour, and a freed
// address is handed out again to the next allocation of its size, as the
// driver's allocator does (MemAlloc). It checks what
// the real driver requires of its caller: cuInit first, a current context
// for memory and module calls, known pointers, launch geometry within an
// sm_90 device's limits. Create one with NewDriver.
type Driver struct {
	mu        sync.Mutex
	devices   int
	cc        [2]int                // compute capability: major, minor
	optin     int                   // DeviceAttrSharedOptin: bytes of shared memory a block can opt in to
	optedIn   map[cuda.Function]int // FuncAttrMaxDynamicShared of each function, when set
	memLimit  int                   // bytes; 0: no limit
	inited    bool
	retained  map[cuda.DeviceID]int
	current   cuda.Context
	next      cuda.DevPtr
	reuse     map[int][]cuda.DevPtr // freed addresses of MemAlloc, by their 256-byte rounded size, handed out again
	allocs    map[cuda.DevPtr][]byte
	used      int
	failNext  map[string]int
	kernels   map[string]bool
	modules   map[cuda.Module]bool
	functions map[cuda.Function]string
	launches  []Launch
	images    [][]byte
	calls     map[string]int         // entry point → calls so far (Calls)
	mapped    map[cuda.DevPtr][]byte // allocations in real host memory (emulate.go), by address
	emu       *Emulator              // runs launches, when set (NewEmulatedDriver)
	pinned    map[uintptr][]byte     // page-locked host memory (hostmem.go), by address
	managed   map[cuda.DevPtr]bool   // allocations of MemAllocManaged (emulate.go)
	deferred  bool                   // queue launches, GEMMs and device memsets (SetDeferred, deferred.go)
	queue     []queued               // work queued on the stream, not yet run (deferred.go)
	clock     float64                // the stream's virtual clock, ms (events.go)
	events    map[cuda.Event]*event  // live events (events.go)
	nextEvent int
}

// sm90SharedOptin is an sm_90 device's DeviceAttrSharedOptin: 227 KiB.
const sm90SharedOptin = 227 << 10

// NewDriver returns a fake driver with the given number of devices
// (0: cuInit fails with CUDA_ERROR_NO_DEVICE) of compute capability 9.0
// (227 KiB of shared memory a block can opt in to: SetSharedOptin)
// and device memory of memLimit bytes (0: unlimited). Modules loaded into
// it hold the kernels named, and those a PTX image defines (its
// ".visible .entry" lines).
func NewDriver(devices, memLimit int, kernels ...string) *Driver {
	d := &Driver{devices: devices, cc: [2]int{9, 0}, optin: sm90SharedOptin, optedIn: map[cuda.Function]int{},
		memLimit: memLimit, retained: map[cuda.DeviceID]int{},
		next: 0x7f0000000000, allocs: map[cuda.DevPtr][]byte{}, failNext: map[string]int{},
		kernels: map[string]bool{}, modules: map[cuda.Module]bool{}, functions: map[cuda.Function]string{}}
	for _, k := range kernels {
		d.kernels[k] = true
	}
	return d
}

// FailNext makes the next call of the entry point call ("cuMemAlloc_v2")
// fail with the CUresult code.
func (d *Driver) FailNext(call string, code int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.failNext[call] = code
}

// injected returns the failure FailNext queued for call, once; d.mu is held.
func (d *Driver) injected(call string) error {
	code, ok := d.failNext[call]
	if !ok {
		return nil
	}
	delete(d.failNext, call)
	return fail(call, code, "injected by the test")
}

// SetComputeCapability sets the compute capability the devices report.
func (d *Driver) SetComputeCapability(major, minor int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cc = [2]int{major, minor}
}

// SetSharedOptin sets the shared memory a block can opt in to
// (DeviceAttrSharedOptin), which FuncSetAttribute and LaunchKernel check.
func (d *Driver) SetSharedOptin(bytes int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.optin = bytes
}

// Images returns the module images loaded so far, in order, as the driver
// got them (PTX text with its NUL byte).
func (d *Driver) Images() [][]byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([][]byte(nil), d.images...)
}

// Live returns the allocations not yet freed and their bytes.
func (d *Driver) Live() (allocations, bytes int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.allocs), d.used
}

// Retained returns how many times device dev's primary context is retained.
func (d *Driver) Retained(dev cuda.DeviceID) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.retained[dev]
}

// Modules returns the number of modules loaded and not unloaded.
func (d *Driver) Modules() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.modules)
}

// Launches returns the kernel launches so far.
func (d *Driver) Launches() []Launch {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Launch(nil), d.launches...)
}

// Calls returns how many times the entry point call ("cuMemcpyHtoD_v2")
// was called so far, failed calls included.
func (d *Driver) Calls(call string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[call]
}

// enter takes the lock and checks the state every call needs: an injected
// failure, cuInit, and (when ctx) a current context. Callers defer
// d.mu.Unlock() before calling it: the lock is held on every return.
func (d *Driver) enter(call string, ctx bool) error {
	d.mu.Lock()
	if d.calls == nil {
		d.calls = map[string]int{}
	}
	d.calls[call]++
	if err := d.injected(call); err != nil {
		return err
	}
	if !d.inited && call != "cuInit" && call != "cuDriverGetVersion" {
		return fail(call, errNotInitialized, "cuInit was not called")
	}
	if ctx && d.current == 0 {
		return fail(call, errInvalidContext, "no current context")
	}
	return nil
}

func (d *Driver) Path() string { return "fake" }

func (d *Driver) Init() error {
	defer d.mu.Unlock()
	if err := d.enter("cuInit", false); err != nil {
		return err
	}
	if d.devices == 0 {
		return fail("cuInit", cuda.CUDAErrorNoDevice, "no CUDA-capable device is detected")
	}
	d.inited = true
	return nil
}

func (d *Driver) Version() (int, error) {
	defer d.mu.Unlock()
	return 13000, d.enter("cuDriverGetVersion", false)
}

func (d *Driver) DeviceCount() (int, error) {
	defer d.mu.Unlock()
	if err := d.enter("cuDeviceGetCount", false); err != nil {
		return 0, err
	}
	return d.devices, nil
}

func (d *Driver) DeviceGet(ordinal int) (cuda.DeviceID, error) {
	defer d.mu.Unlock()
	if err := d.enter("cuDeviceGet", false); err != nil {
		return 0, err
	}
	if ordinal < 0 || ordinal >= d.devices {
		return 0, fail("cuDeviceGet", errInvalidDevice, fmt.Sprintf("ordinal %d of %d", ordinal, d.devices))
	}
	return cuda.DeviceID(ordinal), nil
}

func (d *Driver) DeviceName(dev cuda.DeviceID) (string, error) {
	defer d.mu.Unlock()
	if err := d.enter("cuDeviceGetName", false); err != nil {
		return "", err
	}
	return fmt.Sprintf("Fake Device %d", dev), nil
}

func (d *Driver) ComputeCapability(dev cuda.DeviceID) (major, minor int, err error) {
	defer d.mu.Unlock()
	if err := d.enter("cuDeviceGetAttribute", false); err != nil {
		return 0, 0, err
	}
	if int(dev) < 0 || int(dev) >= d.devices {
		return 0, 0, fail("cuDeviceGetAttribute", errInvalidDevice, fmt.Sprintf("device %d of %d", dev, d.devices))
	}
	return d.cc[0], d.cc[1], nil
}

// DeviceAttribute is cuDeviceGetAttribute of the attributes the fake
// knows: the compute capability's and DeviceAttrSharedOptin.
func (d *Driver) DeviceAttribute(dev cuda.DeviceID, attr int) (int, error) {
	defer d.mu.Unlock()
	if err := d.enter("cuDeviceGetAttribute", false); err != nil {
		return 0, err
	}
	if int(dev) < 0 || int(dev) >= d.devices {
		return 0, fail("cuDeviceGetAttribute", errInvalidDevice, fmt.Sprintf("device %d of %d", dev, d.devices))
	}
	switch attr {
	case 75:
		return d.cc[0], nil
	case 76:
		return d.cc[1], nil
	case cuda.DeviceAttrSharedOptin:
		return d.optin, nil
	}
	return 0, fail("cuDeviceGetAttribute", errInvalidValue, fmt.Sprintf("attribute %d is not faked", attr))
}

// FuncSetAttribute is cuFuncSetAttribute of FuncAttrMaxDynamicShared (the
// only attribute faked): at most the opt-in limit (SetSharedOptin), the
// fake's kernels having no static shared memory.
func (d *Driver) FuncSetAttribute(f cuda.Function, attr, value int) error {
	defer d.mu.Unlock()
	if err := d.enter("cuFuncSetAttribute", true); err != nil {
		return err
	}
	if _, ok := d.functions[f]; !ok {
		return fail("cuFuncSetAttribute", errInvalidHandle, "unknown function")
	}
	if attr != cuda.FuncAttrMaxDynamicShared {
		return fail("cuFuncSetAttribute", errInvalidValue, fmt.Sprintf("attribute %d is not faked", attr))
	}
	if value < 0 || value > d.optin {
		return fail("cuFuncSetAttribute", errInvalidValue, fmt.Sprintf("%d bytes of dynamic shared memory: the device allows %d", value, d.optin))
	}
	d.optedIn[f] = value
	return nil
}

func (d *Driver) PrimaryCtxRetain(dev cuda.DeviceID) (cuda.Context, error) {
	defer d.mu.Unlock()
	if err := d.enter("cuDevicePrimaryCtxRetain", false); err != nil {
		return 0, err
	}
	d.retained[dev]++
	return cuda.Context(0x1000 + int(dev)), nil
}

func (d *Driver) PrimaryCtxRelease(dev cuda.DeviceID) error {
	defer d.mu.Unlock()
	if err := d.enter("cuDevicePrimaryCtxRelease_v2", false); err != nil {
		return err
	}
	if d.retained[dev] == 0 {
		return fail("cuDevicePrimaryCtxRelease_v2", errInvalidContext, "released more often than retained")
	}
	d.retained[dev]--
	return nil
}

func (d *Driver) CtxSetCurrent(c cuda.Context) error {
	defer d.mu.Unlock()
	if err := d.enter("cuCtxSetCurrent", false); err != nil {
		return err
	}
	if d.retained[cuda.DeviceID(int(c)-0x1000)] == 0 {
		return fail("cuCtxSetCurrent", errInvalidContext, "context not retained")
	}
	d.current = c
	return nil
}

// CtxSynchronize is cuCtxSynchronize: in the deferred mode (SetDeferred)
// it runs the queued work, whose first failure it returns.
func (d *Driver) CtxSynchronize() error {
	defer d.mu.Unlock()
	if err := d.enter("cuCtxSynchronize", true); err != nil {
		return err
	}
	return d.flush()
}

func (d *Driver) MemAlloc(bytes int) (cuda.DevPtr, error) {
	defer d.mu.Unlock()
	if err := d.enter("cuMemAlloc_v2", true); err != nil {
		return 0, err
	}
	if bytes <= 0 {
		return 0, fail("cuMemAlloc_v2", errInvalidValue, fmt.Sprintf("%d bytes", bytes))
	}
	if d.memLimit > 0 && d.used+bytes > d.memLimit {
		return 0, fail("cuMemAlloc_v2", errOutOfMemory, fmt.Sprintf("%d bytes asked, %d of %d in use", bytes, d.used, d.memLimit))
	}
	if d.emu != nil { // the kernels run on the CPU: memory at real addresses
		return d.allocMapped("cuMemAlloc_v2", bytes)
	}
	// The driver hands a freed range out again to the next allocation
	// that fits it (a buffer freed and one allocated after it often share
	// an address on a GPU), so a handle kept past its Free points at the
	// new allocation: the fake does the same, the last freed range of the
	// same rounded size first.
	rounded := (bytes + 255) / 256 * 256
	p := d.next
	if free := d.reuse[rounded]; len(free) > 0 && !d.overlapsMapped(free[len(free)-1], rounded) {
		p, d.reuse[rounded] = free[len(free)-1], free[:len(free)-1]
	} else {
		d.next += cuda.DevPtr(rounded + 4096) // aligned, with a gap
	}
	d.allocs[p] = make([]byte, bytes)
	d.used += bytes
	return p, nil
}

func (d *Driver) MemFree(p cuda.DevPtr) error {
	defer d.mu.Unlock()
	if err := d.enter("cuMemFree_v2", true); err != nil {
		return err
	}
	mem, ok := d.allocs[p]
	if !ok {
		return fail("cuMemFree_v2", errInvalidValue, fmt.Sprintf("%#x is not an allocation", uint64(p)))
	}
	if err := d.flush(); err != nil { // cuMemFree waits for the device (deferred.go)
		return err
	}
	d.used -= len(mem)
	delete(d.allocs, p)
	delete(d.managed, p)
	if _, mapped := d.mapped[p]; !mapped { // a fake address MemAlloc may hand out again
		if d.reuse == nil {
			d.reuse = map[int][]cuda.DevPtr{}
		}
		rounded := (len(mem) + 255) / 256 * 256
		d.reuse[rounded] = append(d.reuse[rounded], p)
	}
	return d.unmap(p)
}

// overlapsMapped reports whether [p, p+n) meets host memory mapped since
// (allocMapped: mmap may place it in a freed fake range); d.mu is held.
func (d *Driver) overlapsMapped(p cuda.DevPtr, n int) bool {
	for b, m := range d.mapped {
		if b < p+cuda.DevPtr(n) && p < b+cuda.DevPtr(len(m)) {
			return true
		}
	}
	return false
}

// span returns the n bytes of device memory at p, which must lie inside
// one allocation; d.mu is held.
func (d *Driver) span(p cuda.DevPtr, n int) ([]byte, bool) {
	bases := make([]cuda.DevPtr, 0, len(d.allocs))
	for b := range d.allocs {
		bases = append(bases, b)
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	i := sort.Search(len(bases), func(i int) bool { return bases[i] > p }) - 1
	if i < 0 || n < 0 {
		return nil, false
	}
	mem := d.allocs[bases[i]]
	off := int(p - bases[i])
	if off+n > len(mem) {
		return nil, false
	}
	return mem[off : off+n], true
}

func (d *Driver) MemcpyHtoD(dst cuda.DevPtr, src []byte) error {
	defer d.mu.Unlock()
	if err := d.enter("cuMemcpyHtoD_v2", true); err != nil {
		return err
	}
	mem, ok := d.span(dst, len(src))
	if !ok {
		return fail("cuMemcpyHtoD_v2", errInvalidValue, fmt.Sprintf("%d bytes at %#x are not inside one allocation", len(src), uint64(dst)))
	}
	if err := d.flush(); err != nil { // a stream sync before the copy (deferred.go)
		return err
	}
	copy(mem, src)
	return nil
}

func (d *Driver) MemcpyDtoH(dst []byte, src cuda.DevPtr) error {
	defer d.mu.Unlock()
	if err := d.enter("cuMemcpyDtoH_v2", true); err != nil {
		return err
	}
	mem, ok := d.span(src, len(dst))
	if !ok {
		return fail("cuMemcpyDtoH_v2", errInvalidValue, fmt.Sprintf("%d bytes at %#x are not inside one allocation", len(dst), uint64(src)))
	}
	if err := d.flush(); err != nil { // after the work queued before it (deferred.go)
		return err
	}
	copy(dst, mem)
	return nil
}

func (d *Driver) ModuleLoadData(image []byte) (cuda.Module, error) {
	defer d.mu.Unlock()
	if err := d.enter("cuModuleLoadData", true); err != nil {
		return 0, err
	}
	if len(image) == 0 || image[len(image)-1] != 0 {
		return 0, fail("cuModuleLoadData", errInvalidImage, "PTX text must end in a NUL byte")
	}
	m := cuda.Module(0x2000 + len(d.images))
	d.modules[m] = true
	d.images = append(d.images, append([]byte(nil), image...))
	for _, k := range ptxEntries(image) {
		d.kernels[k] = true
	}
	return m, nil
}

func (d *Driver) ModuleUnload(m cuda.Module) error {
	defer d.mu.Unlock()
	if err := d.enter("cuModuleUnload", true); err != nil {
		return err
	}
	if !d.modules[m] {
		return fail("cuModuleUnload", errInvalidHandle, "unknown module")
	}
	if err := d.flush(); err != nil { // its queued launches run first
		return err
	}
	delete(d.modules, m)
	return nil
}

func (d *Driver) ModuleGetFunction(m cuda.Module, name string) (cuda.Function, error) {
	defer d.mu.Unlock()
	if err := d.enter("cuModuleGetFunction", true); err != nil {
		return 0, err
	}
	if !d.modules[m] {
		return 0, fail("cuModuleGetFunction", errInvalidHandle, "unknown module")
	}
	if !d.kernels[name] {
		return 0, fail("cuModuleGetFunction", errNotFound, "named symbol not found")
	}
	f := cuda.Function(0x3000 + len(d.functions))
	d.functions[f] = name
	return f, nil
}

// LaunchKernel records the launch after checking its geometry against an
// sm_90 device's limits (1024 threads a block; block 1024×1024×64; grid
// (2³¹-1)×65535×65535; dynamic shared memory up to 48 KiB, or up to the
// kernel's FuncAttrMaxDynamicShared when set: FuncSetAttribute). It
// runs nothing, unless the driver emulates a device (NewEmulatedDriver):
// then the kernel runs on the CPU before it returns, or, in the deferred
// mode (SetDeferred), at the next synchronization point.
func (d *Driver) LaunchKernel(f cuda.Function, grid, block cuda.Dim3, sharedBytes int, params []unsafe.Pointer) error {
	defer d.mu.Unlock()
	if err := d.enter("cuLaunchKernel", true); err != nil {
		return err
	}
	name, ok := d.functions[f]
	if !ok {
		return fail("cuLaunchKernel", errInvalidHandle, "unknown function")
	}
	if !within(block, cuda.Dim3{X: 1024, Y: 1024, Z: 64}) || block.Threads() > 1024 ||
		!within(grid, cuda.Dim3{X: 1<<31 - 1, Y: 65535, Z: 65535}) || sharedBytes < 0 {
		return fail("cuLaunchKernel", errInvalidValue, fmt.Sprintf("grid %v block %v shared %d bytes", grid, block, sharedBytes))
	}
	if limit := max(cuda.SharedDefault, d.optedIn[f]); sharedBytes > limit {
		return fail("cuLaunchKernel", errInvalidValue, fmt.Sprintf("%s: %d bytes of dynamic shared memory, more than the %d its CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES allows",
			name, sharedBytes, limit))
	}
	d.launches = append(d.launches, Launch{Kernel: name, Grid: grid, Block: block, SharedBytes: sharedBytes, Params: len(params)})
	if d.emu != nil {
		// The parameter values stay as they are: Device.Launch makes them
		// afresh for every launch, and the slice keeps them alive.
		params = append([]unsafe.Pointer(nil), params...)
		return d.submit("cuLaunchKernel", func() error { return d.emu.launch(name, grid, block, sharedBytes, params) })
	}
	return nil
}

// within reports 1 ≤ x ≤ max in every dimension.
func within(x, max cuda.Dim3) bool {
	return x.X >= 1 && x.Y >= 1 && x.Z >= 1 && x.X <= max.X && x.Y <= max.Y && x.Z <= max.Z
}

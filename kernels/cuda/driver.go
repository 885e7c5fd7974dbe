package cuda

import (
	"fmt"
	"unsafe"
)

// driverLib is the CUDA driver library bound at run time.
type driverLib struct {
	path              string
	init              func(flags uint32) int32
	version           func(v *int32) int32
	deviceGetCount    func(n *int32) int32
	deviceGet         func(dev *int32, ordinal int32) int32
	deviceGetName     func(name *byte, n int32, dev int32) int32
	deviceGetAttr     func(v *int32, attr int32, dev int32) int32
	primaryCtxRetain  func(ctx *uintptr, dev int32) int32
	primaryCtxRelease func(dev int32) int32
	ctxSetCurrent     func(ctx uintptr) int32
	ctxSynchronize    func() int32
	memAlloc          func(p *uint64, n uint64) int32
	memFree           func(p uint64) int32
	memAllocManaged   func(p *uint64, n uint64, flags uint32) int32
	memsetD32         func(p uint64, v uint32, n uint64) int32
	memcpyHtoD        func(dst uint64, src unsafe.Pointer, n uint64) int32
	memcpyDtoH        func(dst unsafe.Pointer, src uint64, n uint64) int32
	moduleLoadData    func(m *uintptr, image unsafe.Pointer) int32
	moduleUnload      func(m uintptr) int32
	moduleGetFunction func(f *uintptr, m uintptr, name string) int32
	funcSetAttribute  func(f uintptr, attr int32, value int32) int32
	launchKernel      func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, stream uintptr, params, extra unsafe.Pointer) int32
	getErrorName      func(r int32, s *unsafe.Pointer) int32
	getErrorString    func(r int32, s *unsafe.Pointer) int32
	memAllocHost      func(p *unsafe.Pointer, n uint64) int32
	memFreeHost       func(p unsafe.Pointer) int32
	eventCreate       func(e *uintptr, flags uint32) int32
	eventRecord       func(e uintptr, stream uintptr) int32
	eventSynchronize  func(e uintptr) int32
	eventElapsedTime  func(ms *float32, start, end uintptr) int32
	eventDestroy      func(e uintptr) int32
}

func (d *driverLib) symbols() []symbol {
	return []symbol{
		{name: "cuInit", fptr: &d.init},
		{name: "cuDriverGetVersion", fptr: &d.version},
		{name: "cuDeviceGetCount", fptr: &d.deviceGetCount},
		{name: "cuDeviceGet", fptr: &d.deviceGet},
		{name: "cuDeviceGetName", fptr: &d.deviceGetName},
		{name: "cuDeviceGetAttribute", fptr: &d.deviceGetAttr},
		{name: "cuDevicePrimaryCtxRetain", fptr: &d.primaryCtxRetain},
		{name: "cuDevicePrimaryCtxRelease_v2", fptr: &d.primaryCtxRelease},
		{name: "cuCtxSetCurrent", fptr: &d.ctxSetCurrent},
		{name: "cuCtxSynchronize", fptr: &d.ctxSynchronize},
		{name: "cuMemAlloc_v2", fptr: &d.memAlloc},
		{name: "cuMemFree_v2", fptr: &d.memFree},
		{name: "cuMemAllocManaged", fptr: &d.memAllocManaged},
		{name: "cuMemsetD32_v2", fptr: &d.memsetD32},
		{name: "cuMemcpyHtoD_v2", fptr: &d.memcpyHtoD},
		{name: "cuMemcpyDtoH_v2", fptr: &d.memcpyDtoH},
		{name: "cuModuleLoadData", fptr: &d.moduleLoadData},
		{name: "cuModuleUnload", fptr: &d.moduleUnload},
		{name: "cuModuleGetFunction", fptr: &d.moduleGetFunction},
		{name: "cuFuncSetAttribute", fptr: &d.funcSetAttribute},
		{name: "cuLaunchKernel", fptr: &d.launchKernel},
		{name: "cuGetErrorName", fptr: &d.getErrorName},
		{name: "cuGetErrorString", fptr: &d.getErrorString},
		{name: "cuMemAllocHost_v2", fptr: &d.memAllocHost},
		{name: "cuMemFreeHost", fptr: &d.memFreeHost},
		// cuEventElapsedTime keeps its CUDA 2.0 name and ABI: CUDA 12.8
		// added cuEventElapsedTime_v2 beside it, and drivers keep exporting
		// the first for the binaries built against it. cuEventDestroy has
		// been cuEventDestroy_v2 since CUDA 4.0 (cuda.h's #define).
		{name: "cuEventCreate", fptr: &d.eventCreate},
		{name: "cuEventRecord", fptr: &d.eventRecord},
		{name: "cuEventSynchronize", fptr: &d.eventSynchronize},
		{name: "cuEventElapsedTime", fptr: &d.eventElapsedTime},
		{name: "cuEventDestroy_v2", fptr: &d.eventDestroy},
	}
}

// LoadDriver loads the CUDA driver library from path, or, when path is
// empty, by its sonames (libcuda.so.1, libcuda.so). It calls nothing in it:
// Init is the first call. A library that is absent or lacks an entry point
// gives a *MissingError.
func LoadDriver(path string) (Driver, error) {
	d := &driverLib{}
	used, tried, err := openLib(path, driverSonames(), func(h uintptr) error { return bindAll(h, d.symbols()) })
	if err != nil {
		return nil, &MissingError{What: "CUDA driver library", Tried: tried, Err: err,
			Hint: "install the NVIDIA driver, or set HONE_LIBCUDA to the path of libcuda.so.1"}
	}
	d.path = used
	return d, nil
}

// check turns a CUresult into an *Error naming call, with the driver's own
// name and description of the code.
func (d *driverLib) check(call string, r int32) error {
	if r == CUDASuccess {
		return nil
	}
	e := &Error{Call: call, Code: int(r)}
	var p unsafe.Pointer
	if d.getErrorName(r, &p) == CUDASuccess {
		e.Name = goString(p)
	} else {
		e.Name = driverCodeName(int(r))
	}
	p = nil
	if d.getErrorString(r, &p) == CUDASuccess {
		e.Text = goString(p)
	}
	return e
}

func (d *driverLib) Path() string { return d.path }

func (d *driverLib) Init() error { return d.check("cuInit", d.init(0)) }

func (d *driverLib) Version() (int, error) {
	var v int32
	err := d.check("cuDriverGetVersion", d.version(&v))
	return int(v), err
}

func (d *driverLib) DeviceCount() (int, error) {
	var n int32
	err := d.check("cuDeviceGetCount", d.deviceGetCount(&n))
	return int(n), err
}

func (d *driverLib) DeviceGet(ordinal int) (DeviceID, error) {
	o, err := cInt("ordinal", ordinal)
	if err != nil {
		return 0, err
	}
	var dev int32
	err = d.check("cuDeviceGet", d.deviceGet(&dev, o))
	return DeviceID(dev), err
}

func (d *driverLib) DeviceName(dev DeviceID) (string, error) {
	buf := make([]byte, 256)
	if err := d.check("cuDeviceGetName", d.deviceGetName(&buf[0], int32(len(buf)), int32(dev))); err != nil {
		return "", err
	}
	return goString(unsafe.Pointer(&buf[0])), nil
}

// The CUdevice_attribute codes of the compute capability.
const (
	attrComputeCapabilityMajor = 75
	attrComputeCapabilityMinor = 76
)

func (d *driverLib) ComputeCapability(dev DeviceID) (major, minor int, err error) {
	var ma, mi int32
	if err := d.check("cuDeviceGetAttribute", d.deviceGetAttr(&ma, attrComputeCapabilityMajor, int32(dev))); err != nil {
		return 0, 0, err
	}
	if err := d.check("cuDeviceGetAttribute", d.deviceGetAttr(&mi, attrComputeCapabilityMinor, int32(dev))); err != nil {
		return 0, 0, err
	}
	return int(ma), int(mi), nil
}

func (d *driverLib) PrimaryCtxRetain(dev DeviceID) (Context, error) {
	var c uintptr
	err := d.check("cuDevicePrimaryCtxRetain", d.primaryCtxRetain(&c, int32(dev)))
	return Context(c), err
}

func (d *driverLib) PrimaryCtxRelease(dev DeviceID) error {
	return d.check("cuDevicePrimaryCtxRelease_v2", d.primaryCtxRelease(int32(dev)))
}

func (d *driverLib) CtxSetCurrent(c Context) error {
	return d.check("cuCtxSetCurrent", d.ctxSetCurrent(uintptr(c)))
}

func (d *driverLib) CtxSynchronize() error {
	return d.check("cuCtxSynchronize", d.ctxSynchronize())
}

func (d *driverLib) MemAlloc(bytes int) (DevPtr, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("cuMemAlloc_v2: %d bytes: want a positive size", bytes)
	}
	var p uint64
	err := d.check("cuMemAlloc_v2", d.memAlloc(&p, uint64(bytes)))
	return DevPtr(p), err
}

func (d *driverLib) MemFree(p DevPtr) error {
	return d.check("cuMemFree_v2", d.memFree(uint64(p)))
}

// memAttachGlobal is CU_MEM_ATTACH_GLOBAL: managed memory any stream of
// any device may access.
const memAttachGlobal = 1

func (d *driverLib) MemAllocManaged(bytes int) (DevPtr, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("cuMemAllocManaged: %d bytes: want a positive size", bytes)
	}
	var p uint64
	err := d.check("cuMemAllocManaged", d.memAllocManaged(&p, uint64(bytes), memAttachGlobal))
	return DevPtr(p), err
}

func (d *driverLib) MemsetD32(p DevPtr, v uint32, n int) error {
	if n < 0 {
		return fmt.Errorf("cuMemsetD32_v2: %d words", n)
	}
	return d.check("cuMemsetD32_v2", d.memsetD32(uint64(p), v, uint64(n)))
}

func (d *driverLib) MemcpyHtoD(dst DevPtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return d.check("cuMemcpyHtoD_v2", d.memcpyHtoD(uint64(dst), unsafe.Pointer(&src[0]), uint64(len(src))))
}

func (d *driverLib) MemcpyDtoH(dst []byte, src DevPtr) error {
	if len(dst) == 0 {
		return nil
	}
	return d.check("cuMemcpyDtoH_v2", d.memcpyDtoH(unsafe.Pointer(&dst[0]), uint64(src), uint64(len(dst))))
}

func (d *driverLib) ModuleLoadData(image []byte) (Module, error) {
	if len(image) == 0 {
		return 0, fmt.Errorf("cuModuleLoadData: empty image")
	}
	var m uintptr
	err := d.check("cuModuleLoadData", d.moduleLoadData(&m, unsafe.Pointer(&image[0])))
	return Module(m), err
}

func (d *driverLib) ModuleUnload(m Module) error {
	return d.check("cuModuleUnload", d.moduleUnload(uintptr(m)))
}

func (d *driverLib) ModuleGetFunction(m Module, name string) (Function, error) {
	var f uintptr
	if err := d.check("cuModuleGetFunction", d.moduleGetFunction(&f, uintptr(m), name)); err != nil {
		return 0, fmt.Errorf("%w: kernel %q", err, name)
	}
	return Function(f), nil
}

func (d *driverLib) DeviceAttribute(dev DeviceID, attr int) (int, error) {
	a, err := cInt("attribute", attr)
	if err != nil {
		return 0, err
	}
	var v int32
	err = d.check("cuDeviceGetAttribute", d.deviceGetAttr(&v, a, int32(dev)))
	return int(v), err
}

func (d *driverLib) FuncSetAttribute(f Function, attr, value int) error {
	a, err := cInt("attribute", attr)
	if err != nil {
		return err
	}
	v, err := cInt("value", value)
	if err != nil {
		return err
	}
	return d.check("cuFuncSetAttribute", d.funcSetAttribute(uintptr(f), a, v))
}

func (d *driverLib) LaunchKernel(f Function, grid, block Dim3, sharedBytes int, params []unsafe.Pointer) error {
	dims := []int{grid.X, grid.Y, grid.Z, block.X, block.Y, block.Z, sharedBytes}
	u := make([]uint32, len(dims))
	for i, v := range dims {
		if v < 0 || v > 1<<31-1 {
			return fmt.Errorf("cuLaunchKernel: grid %v block %v shared %d: out of range", grid, block, sharedBytes)
		}
		u[i] = uint32(v)
	}
	var pp unsafe.Pointer
	if len(params) > 0 {
		pp = unsafe.Pointer(&params[0])
	}
	return d.check("cuLaunchKernel", d.launchKernel(uintptr(f), u[0], u[1], u[2], u[3], u[4], u[5], u[6], 0, pp, nil))
}

func (d *driverLib) MemAllocHost(bytes int) (unsafe.Pointer, error) {
	if bytes <= 0 {
		return nil, fmt.Errorf("cuMemAllocHost_v2: %d bytes: want a positive size", bytes)
	}
	var p unsafe.Pointer
	err := d.check("cuMemAllocHost_v2", d.memAllocHost(&p, uint64(bytes)))
	return p, err
}

func (d *driverLib) MemFreeHost(p unsafe.Pointer) error {
	return d.check("cuMemFreeHost", d.memFreeHost(p))
}

// eventDefault is CU_EVENT_DEFAULT: timing enabled, the host spinning in
// cuEventSynchronize (the autotune waits on its events once per shape).
const eventDefault = 0

func (d *driverLib) EventCreate() (Event, error) {
	var e uintptr
	err := d.check("cuEventCreate", d.eventCreate(&e, eventDefault))
	return Event(e), err
}

func (d *driverLib) EventRecord(e Event) error {
	return d.check("cuEventRecord", d.eventRecord(uintptr(e), 0))
}

func (d *driverLib) EventSynchronize(e Event) error {
	return d.check("cuEventSynchronize", d.eventSynchronize(uintptr(e)))
}

func (d *driverLib) EventElapsedTime(start, end Event) (float32, error) {
	var ms float32
	err := d.check("cuEventElapsedTime", d.eventElapsedTime(&ms, uintptr(start), uintptr(end)))
	return ms, err
}

func (d *driverLib) EventDestroy(e Event) error {
	return d.check("cuEventDestroy_v2", d.eventDestroy(uintptr(e)))
}

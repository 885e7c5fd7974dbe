package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
)

// Options says where to find the CUDA libraries and which device to use.
type Options struct {
	// DriverLib is an explicit path of libcuda; empty tries its sonames.
	DriverLib string
	// BLASLib is an explicit path of libcublas; empty tries the sonames of
	// CUDA 13, 12 and 11 that the driver runs (none above its own major).
	BLASLib string
	// BLASLt asks Open to load cuBLASLt too (by its sonames, or from
	// BLASLtLib when that is set), for Ops.SetGEMMLibrary(GEMMCublasLt).
	// It is optional: when it is missing the device opens anyway, runs its
	// GEMMs on cuBLAS, and SetGEMMLibrary says what was missing.
	BLASLt bool
	// BLASLtLib is an explicit path of libcublasLt; setting it implies BLASLt.
	BLASLtLib string
	// Ordinal is the device's index among those the driver sees.
	Ordinal int
}

// Device is one CUDA device with its primary context and a cuBLAS handle.
// Its methods are safe for concurrent use; they run one at a time.
type Device struct {
	mu      sync.Mutex
	drv     Driver
	blas    BLAS
	id      DeviceID
	ordinal int
	name    string
	cc      int // compute capability, 10·major + minor (90 for 9.0)
	version int
	ctx     Context
	handle  BLASHandle
	closed  bool
	live    map[DevPtr]int // bytes of each allocation not yet freed
	modules map[Module]bool
	lt      ltState // cuBLASLt, when loaded (gemmlt.go)
	optin   int     // DeviceAttrSharedOptin, once a launch asked past SharedDefault (0: not yet)
}

// Open loads the driver and cuBLAS and opens device o.Ordinal. What is
// missing — the driver library, the cuBLAS library or a device — comes back
// as a *MissingError; other failures as the driver's *Error, wrapped.
func Open(o Options) (*Device, error) {
	drv, err := LoadDriver(o.DriverLib)
	if err != nil {
		return nil, err
	}
	// cuDriverGetVersion needs no cuInit; its failure leaves every soname
	// to try.
	driverMajor := 0
	if v, err := drv.Version(); err == nil {
		driverMajor = v / 1000
	}
	blas, err := loadBLAS(o.BLASLib, driverMajor)
	if err != nil {
		return nil, err
	}
	d, err := OpenWith(drv, blas, o.Ordinal)
	if err != nil || (!o.BLASLt && o.BLASLtLib == "") {
		return d, err
	}
	// cuBLASLt of cuBLAS's own major (loaded with it as its dependency),
	// else of any major the driver runs.
	ltMajor := sonameMajor(blas.Path())
	if ltMajor == 0 {
		ltMajor = driverMajor
	}
	lt, err := loadBLASLt(o.BLASLtLib, ltMajor)
	if err != nil {
		d.lt.missing = err // the device keeps cublasGemmEx
		return d, nil
	}
	if err := d.UseBLASLt(lt); err != nil {
		return nil, errors.Join(err, d.Close())
	}
	return d, nil
}

// noDevice is the MissingError for a machine whose driver sees no device
// (or not device ordinal).
func noDevice(err error) *MissingError {
	return &MissingError{What: "CUDA device", Err: err, Hint: "nvidia-smi lists the devices the driver sees"}
}

// OpenWith opens device ordinal through drv and blas: cuInit, the device,
// its primary context and a cuBLAS handle.
func OpenWith(drv Driver, blas BLAS, ordinal int) (*Device, error) {
	if err := drv.Init(); err != nil {
		var ce *Error
		if errors.As(err, &ce) && ce.Code == CUDAErrorNoDevice {
			return nil, noDevice(err)
		}
		if errors.As(err, &ce) && ce.Code == CUDAErrorStubLibrary {
			// The toolkit's stub (…/stubs/libcuda.so) has every entry
			// point but only links: the loader found it (libcuda.so, the
			// last soname tried, or an explicit path) where the driver
			// is missing.
			return nil, &MissingError{What: "CUDA driver library", Tried: []string{drv.Path()}, Err: err,
				Hint: "that is the CUDA toolkit's stub of libcuda, for linking only; install the NVIDIA driver, or set HONE_LIBCUDA to the path of the driver's libcuda.so.1"}
		}
		return nil, fmt.Errorf("CUDA backend: %w", err)
	}
	n, err := drv.DeviceCount()
	if err != nil {
		return nil, fmt.Errorf("CUDA backend: %w", err)
	}
	if ordinal < 0 || ordinal >= n {
		return nil, noDevice(fmt.Errorf("device %d asked for, the driver sees %d", ordinal, n))
	}
	d := &Device{drv: drv, blas: blas, ordinal: ordinal, live: map[DevPtr]int{}, modules: map[Module]bool{}}
	if d.id, err = drv.DeviceGet(ordinal); err != nil {
		return nil, fmt.Errorf("CUDA backend: %w", err)
	}
	if d.name, err = drv.DeviceName(d.id); err != nil {
		return nil, fmt.Errorf("CUDA backend: %w", err)
	}
	major, minor, err := drv.ComputeCapability(d.id)
	if err != nil {
		return nil, fmt.Errorf("CUDA backend: %w", err)
	}
	d.cc = 10*major + minor
	if d.version, err = drv.Version(); err != nil {
		return nil, fmt.Errorf("CUDA backend: %w", err)
	}
	if d.ctx, err = drv.PrimaryCtxRetain(d.id); err != nil {
		return nil, fmt.Errorf("CUDA backend: device %d: %w", ordinal, err)
	}
	err = d.do(func() error {
		var err error
		d.handle, err = blas.Create()
		return err
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("CUDA backend: device %d: %w", ordinal, err), drv.PrimaryCtxRelease(d.id))
	}
	return d, nil
}

// String names the device: "cuda:0 (NVIDIA H200, driver 13.0, cuBLAS libcublas.so.13, compute 9.0)",
// with ", cuBLASLt libcublasLt.so.13" after cuBLAS when cuBLASLt is bound.
func (d *Device) String() string {
	lt := ""
	if d.lt.lib != nil {
		lt = ", cuBLASLt " + d.lt.lib.Path()
	}
	return fmt.Sprintf("cuda:%d (%s, driver %d.%d, cuBLAS %s%s, compute %d.%d)", d.ordinal, d.name, d.version/1000, d.version%1000/10, d.blas.Path(), lt, d.cc/10, d.cc%10)
}

// errClosed is returned by a Device's methods after Close.
var errClosed = errors.New("CUDA device is closed")

// do runs f with the device's context current on this goroutine's OS
// thread, one call at a time.
func (d *Device) do(f func() error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return errClosed
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := d.drv.CtxSetCurrent(d.ctx); err != nil {
		return err
	}
	return f()
}

// Close frees the buffers still allocated, unloads the modules still
// loaded, destroys the cuBLAS handle and releases the primary context. Buffers left allocated are a leak in the
// caller: Close frees them and says so in its error. It is safe to call
// more than once.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := d.drv.CtxSetCurrent(d.ctx); err != nil {
		return errors.Join(err, d.drv.PrimaryCtxRelease(d.id))
	}
	var errs []error
	if n := len(d.live); n > 0 {
		bytes := 0
		for p, b := range d.live {
			bytes += b
			errs = append(errs, d.drv.MemFree(p))
		}
		errs = append([]error{fmt.Errorf("CUDA device %d closed with %d buffers (%d bytes) not freed", d.ordinal, n, bytes)}, errs...)
		clear(d.live)
	}
	for m := range d.modules {
		errs = append(errs, d.drv.ModuleUnload(m))
	}
	clear(d.modules)
	errs = append(errs, d.closeLt())
	errs = append(errs, d.blas.Destroy(d.handle), d.drv.PrimaryCtxRelease(d.id))
	return errors.Join(errs...)
}

package cuda

import (
	"fmt"
	"math"
	"unsafe"
)

// Kernels is a module (PTX or cubin) loaded on a Device: the kernels it
// holds. Device.Close unloads the modules still loaded.
type Kernels struct {
	d *Device
	m Module
}

// Kernel is one kernel of a loaded module.
type Kernel struct {
	k      *Kernels
	f      Function
	name   string
	shared int // the dynamic shared bytes its FuncAttrMaxDynamicShared allows; 0: SharedDefault (optIn)
}

// LoadModule loads a module image; PTX text gets the NUL byte the driver
// wants when it lacks one.
func (d *Device) LoadModule(image []byte) (*Kernels, error) {
	if len(image) > 0 && image[len(image)-1] != 0 {
		image = append(image[:len(image):len(image)], 0)
	}
	k := &Kernels{d: d}
	err := d.do(func() error {
		m, err := d.drv.ModuleLoadData(image)
		if err != nil {
			return err
		}
		k.m = m
		d.modules[m] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("CUDA LoadModule: %w", err)
	}
	return k, nil
}

// Unload unloads the module; its kernels cannot be launched after.
func (k *Kernels) Unload() error {
	err := k.d.do(func() error {
		if !k.d.modules[k.m] {
			return fmt.Errorf("module already unloaded")
		}
		delete(k.d.modules, k.m)
		return k.d.drv.ModuleUnload(k.m)
	})
	if err != nil {
		return fmt.Errorf("CUDA Unload: %w", err)
	}
	return nil
}

// Kernel looks up the kernel called name (its extern "C" name).
func (k *Kernels) Kernel(name string) (*Kernel, error) {
	var f Function
	err := k.d.do(func() error {
		var err error
		f, err = k.d.drv.ModuleGetFunction(k.m, name)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("CUDA kernel %q: %w", name, err)
	}
	return &Kernel{k: k, f: f, name: name}, nil
}

// param converts one kernel argument to the value the kernel's parameter
// holds: a *Buffer of the same device becomes its device address (a nil
// *Buffer the null pointer); int
// (which must fit), int32, uint32 and float32 pass as 4 bytes.
func (d *Device) param(i int, a any) (unsafe.Pointer, error) {
	switch v := a.(type) {
	case *Buffer:
		if v == nil { // the null pointer, for an optional operand
			p := uint64(0)
			return unsafe.Pointer(&p), nil
		}
		if v.d != d {
			return nil, fmt.Errorf("argument %d: a buffer of another device", i)
		}
		if err := v.checkLive(); err != nil {
			return nil, fmt.Errorf("argument %d: %w", i, err)
		}
		p := uint64(v.ptr)
		return unsafe.Pointer(&p), nil
	case int:
		if v < math.MinInt32 || v > math.MaxInt32 {
			return nil, fmt.Errorf("argument %d: %d does not fit an int", i, v)
		}
		x := int32(v)
		return unsafe.Pointer(&x), nil
	case int32:
		return unsafe.Pointer(&v), nil
	case uint32:
		return unsafe.Pointer(&v), nil
	case float32:
		return unsafe.Pointer(&v), nil
	}
	return nil, fmt.Errorf("argument %d: a %T is not a kernel parameter (want *Buffer, int, int32, uint32 or float32)", i, a)
}

// The launch geometry every device since compute capability 3.0 allows
// (the CUDA C++ Programming Guide's technical specifications): past it
// cuLaunchKernel fails with CUDA_ERROR_INVALID_VALUE ("invalid argument"),
// which names neither the kernel nor the dimension, so Launch checks first.
const (
	maxGridX        = 1<<31 - 1
	maxGridYZ       = 65535
	maxBlockXY      = 1024
	maxBlockZ       = 64
	maxBlockThreads = 1024
)

// launchable reports whether grid and block are within those limits.
func launchable(grid, block Dim3) bool {
	dims := block.X >= 1 && block.Y >= 1 && block.Z >= 1 && block.X <= maxBlockXY && block.Y <= maxBlockXY && block.Z <= maxBlockZ &&
		grid.X >= 1 && grid.Y >= 1 && grid.Z >= 1 && grid.X <= maxGridX && grid.Y <= maxGridYZ && grid.Z <= maxGridYZ
	return dims && block.Threads() <= maxBlockThreads // the product only once each factor is bounded
}

// Launch runs the kernel on grid×block threads with sharedBytes of dynamic
// shared memory, on the default stream (it returns before the kernel ends;
// Download waits). args are the kernel's parameters in order (see param).
// More than SharedDefault bytes opts the kernel in first (optIn).
func (k *Kernel) Launch(grid, block Dim3, sharedBytes int, args ...any) error {
	d := k.k.d
	if !launchable(grid, block) {
		return fmt.Errorf("CUDA launch of %s: grid %v, block %v: want every dimension ≥ 1, grid.x at most 2³¹−1, grid.y and grid.z at most 65535, block.x and block.y at most 1024, block.z at most 64, and at most 1024 threads a block", k.name, grid, block)
	}
	err := d.do(func() error {
		if !d.modules[k.k.m] {
			return fmt.Errorf("its module was unloaded")
		}
		params := make([]unsafe.Pointer, len(args))
		for i, a := range args {
			p, err := d.param(i, a)
			if err != nil {
				return err
			}
			params[i] = p
		}
		if err := k.optIn(sharedBytes); err != nil {
			return err
		}
		return d.drv.LaunchKernel(k.f, grid, block, sharedBytes, params)
	})
	if err != nil {
		return fmt.Errorf("CUDA launch of %s: %w", k.name, err)
	}
	return nil
}

// optIn lets the kernel's launches have bytes of dynamic shared memory:
// past SharedDefault, a launch fails unless the kernel's
// FuncAttrMaxDynamicShared was set at least that high, once per kernel (and
// again when a later launch asks for more), after checking bytes against
// the device's DeviceAttrSharedOptin (asked once per device). The driver
// still checks the kernel's static shared memory plus bytes against that
// limit. k's device lock is held.
func (k *Kernel) optIn(bytes int) error {
	if bytes <= SharedDefault || bytes <= k.shared {
		return nil
	}
	d := k.k.d
	if d.optin == 0 {
		v, err := d.drv.DeviceAttribute(d.id, DeviceAttrSharedOptin)
		if err != nil {
			return fmt.Errorf("the device's opt-in shared memory limit: %w", err)
		}
		d.optin = v
	}
	if bytes > d.optin {
		return fmt.Errorf("%d bytes of dynamic shared memory asked, more than the %d bytes a block of this device can opt in to", bytes, d.optin)
	}
	if err := d.drv.FuncSetAttribute(k.f, FuncAttrMaxDynamicShared, bytes); err != nil {
		return fmt.Errorf("opting in to %d bytes of dynamic shared memory: %w", bytes, err)
	}
	k.shared = bytes
	return nil
}

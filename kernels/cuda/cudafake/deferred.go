package cudafake

import "github.com/hone-rl/hone/kernels/cuda"

// The deferred mode (SetDeferred) makes the emulated device asynchronous
// the way a GPU is: cuLaunchKernel, the fake cuBLAS's GEMMs and memsets of
// device memory only queue their work on the stream and return, and the
// queue runs, in order, at the points where the CUDA driver's
// documentation ("API synchronization behavior") has the host wait for
// the stream: cuCtxSynchronize; cuMemcpyDtoH (it returns once the copy
// has completed, and the copy comes after the work queued before it);
// cuMemcpyHtoD from pageable memory (a stream sync is performed before
// the copy is initiated); cuMemsetD32 on managed memory (fully
// synchronous on a Unified Memory region); cuMemFree and cuModuleUnload
// (their memory or kernels must be idle). Managed memory is host memory
// here as before, so a host read of it that no synchronization point came
// before sees the values from before the queued work — what a missing
// synchronization would read on a GPU, where it is a race — and a test
// that forgets one computes wrong numbers instead of passing by luck.
//
// A queued launch that fails is reported at the synchronization point
// that runs it, as its error (a GPU reports an asynchronous failure at
// the next call that waits); the work queued after it is dropped.
//
// clib/emulate_driver.cc, the emulating libcuda that commands load, has the
// same mode under HONE_FAKE_CUDA_DEFERRED (BuildEmulatingLibs).

// queued is work on the emulated stream: call names the entry point that
// queued it.
type queued struct {
	call string
	run  func() error
}

// SetDeferred turns the deferred mode on or off. Turning it off runs the
// work queued so far and returns its first failure.
func (d *Driver) SetDeferred(on bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.deferred = on
	if !on {
		return d.flush()
	}
	return nil
}

// Pending returns the number of launches, GEMMs and memsets queued and not
// yet run (always 0 outside the deferred mode).
func (d *Driver) Pending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.queue)
}

// submit runs f now, or queues it in the deferred mode; d.mu is held. f
// must not take d.mu.
func (d *Driver) submit(call string, f func() error) error {
	if d.deferred {
		d.queue = append(d.queue, queued{call: call, run: f})
		return nil
	}
	return f()
}

// flush runs the queued work in order and returns its first failure,
// dropping what was queued after it; d.mu is held.
func (d *Driver) flush() error {
	q := d.queue
	d.queue = nil
	for _, w := range q {
		if err := w.run(); err != nil {
			return err
		}
	}
	return nil
}

// isManaged reports whether p lies in an allocation of MemAllocManaged;
// d.mu is held.
func (d *Driver) isManaged(p cuda.DevPtr) bool {
	for b := range d.managed {
		if p >= b && p < b+cuda.DevPtr(len(d.allocs[b])) {
			return true
		}
	}
	return false
}

package cuda

import (
	"fmt"
	"unsafe"
)

// AllocManaged allocates n float32 elements of CUDA managed memory
// (cuMemAllocManaged, attached globally) and zeroes them on the device
// (cuMemsetD32), so that its pages are first touched there. Its address is
// valid on the host too: Backend hands it out as a []float32. Free releases
// it, as for Alloc; Live counts it.
func (d *Device) AllocManaged(n int) (*Buffer, error) {
	if n <= 0 {
		return nil, fmt.Errorf("CUDA AllocManaged: %d elements: want a positive count", n)
	}
	b := &Buffer{d: d, n: n}
	err := d.do(func() error {
		p, err := d.drv.MemAllocManaged(4 * n)
		if err != nil {
			return err
		}
		if err := d.drv.MemsetD32(p, 0, n); err != nil {
			return fmt.Errorf("%w (and freeing it: %v)", err, d.drv.MemFree(p))
		}
		b.ptr = p
		d.live[p] = 4 * n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("CUDA AllocManaged of %d floats: %w", n, err)
	}
	return b, nil
}

// Synchronize waits until the device has finished all work queued on it
// (cuCtxSynchronize); a failure of that work comes back here.
func (d *Device) Synchronize() error {
	if err := d.do(d.drv.CtxSynchronize); err != nil {
		return fmt.Errorf("CUDA Synchronize: %w", err)
	}
	return nil
}

// fill sets the buffer's elements to the bits v (cuMemsetD32), on the
// device.
func (b *Buffer) fill(v uint32) error {
	err := b.d.do(func() error {
		if err := b.checkLive(); err != nil {
			return err
		}
		return b.d.drv.MemsetD32(b.ptr, v, b.n)
	})
	if err != nil {
		return fmt.Errorf("CUDA fill of %d floats: %w", b.n, err)
	}
	return nil
}

// hostPtr is the host address of managed memory at p (the same number).
func hostPtr(p DevPtr) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&p))
}

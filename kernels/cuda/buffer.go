package cuda

import (
	"errors"
	"fmt"
	"unsafe"
)

// Buffer is float32 memory on a Device (or int32: UploadInt32; bfloat16
// pairs: UploadBF16), allocated by Alloc and released by Free. The host sees its contents only through Upload and Download.
type Buffer struct {
	d    *Device
	ptr  DevPtr
	n    int     // float32 elements
	base *Buffer // nil, or the buffer this is a view into (view)
	// freed: Free released this buffer (a view reads its base's). The
	// address alone cannot say so: the driver hands a freed address out
	// again, and a stale handle would then reach the new allocation.
	freed bool
}

// view is n elements of b from element off on: the same memory, live while
// b is (never freed itself). The caller keeps off+n ≤ b.Len().
func (b *Buffer) view(off, n int) *Buffer {
	base := b
	if b.base != nil {
		base = b.base
	}
	return &Buffer{d: b.d, ptr: b.ptr + DevPtr(4*off), n: n, base: base}
}

// Alloc allocates n float32 elements (contents undefined).
func (d *Device) Alloc(n int) (*Buffer, error) {
	if n <= 0 {
		return nil, fmt.Errorf("CUDA Alloc: %d elements: want a positive count", n)
	}
	b := &Buffer{d: d, n: n}
	err := d.do(func() error {
		p, err := d.drv.MemAlloc(4 * n)
		if err != nil {
			return err
		}
		b.ptr = p
		d.live[p] = 4 * n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("CUDA Alloc of %d floats: %w", n, err)
	}
	return b, nil
}

// Live returns the number of buffers allocated and not yet freed, and their
// bytes.
func (d *Device) Live() (buffers, bytes int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, b := range d.live {
		bytes += b
	}
	return len(d.live), bytes
}

// Len is the buffer's length in float32 elements.
func (b *Buffer) Len() int { return b.n }

// errFreed is returned for a buffer used after Free.
var errFreed = errors.New("buffer used after Free")

// checkLive fails for a buffer already freed, or a view into one; the
// device's lock is held.
func (b *Buffer) checkLive() error {
	root := b
	if b.base != nil {
		root = b.base
	}
	if _, ok := b.d.live[root.ptr]; !ok || root.freed {
		return errFreed
	}
	return nil
}

// f32Bytes views s as bytes.
func f32Bytes(s []float32) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 4*len(s))
}

// Upload copies src, which must have exactly Len elements, to the device.
func (b *Buffer) Upload(src []float32) error {
	if len(src) != b.n {
		return fmt.Errorf("CUDA Upload: %d values into a buffer of %d", len(src), b.n)
	}
	err := b.d.do(func() error {
		if err := b.checkLive(); err != nil {
			return err
		}
		return b.d.drv.MemcpyHtoD(b.ptr, f32Bytes(src))
	})
	if err != nil {
		return fmt.Errorf("CUDA Upload of %d floats: %w", b.n, err)
	}
	return nil
}

// UploadInt32 copies src, which must have exactly Len elements, to the
// device as int32 values (the kernels' int operands: positions, token
// ids); the buffer's elements are 4 bytes either way.
func (b *Buffer) UploadInt32(src []int32) error {
	if len(src) != b.n {
		return fmt.Errorf("CUDA UploadInt32: %d values into a buffer of %d", len(src), b.n)
	}
	var raw []byte
	if len(src) > 0 {
		raw = unsafe.Slice((*byte)(unsafe.Pointer(&src[0])), 4*len(src))
	}
	err := b.d.do(func() error {
		if err := b.checkLive(); err != nil {
			return err
		}
		return b.d.drv.MemcpyHtoD(b.ptr, raw)
	})
	if err != nil {
		return fmt.Errorf("CUDA UploadInt32 of %d values: %w", b.n, err)
	}
	return nil
}

// UploadBF16 copies bfloat16 values (their bits) to the device, two to an
// element: the buffer must have (len(src)+1)/2 elements; an odd count
// leaves the last half element zero. Kernels read it as unsigned short.
func (b *Buffer) UploadBF16(src []uint16) error {
	if (len(src)+1)/2 != b.n {
		return fmt.Errorf("CUDA UploadBF16: %d values into a buffer of %d elements (want %d)", len(src), b.n, (len(src)+1)/2)
	}
	padded := make([]uint16, 2*b.n)
	copy(padded, src)
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&padded[0])), 4*b.n)
	err := b.d.do(func() error {
		if err := b.checkLive(); err != nil {
			return err
		}
		return b.d.drv.MemcpyHtoD(b.ptr, raw)
	})
	if err != nil {
		return fmt.Errorf("CUDA UploadBF16 of %d values: %w", len(src), err)
	}
	return nil
}

// Download copies the buffer into dst, which must have exactly Len
// elements, after the work queued before it has finished.
func (b *Buffer) Download(dst []float32) error {
	if len(dst) != b.n {
		return fmt.Errorf("CUDA Download: a buffer of %d into %d values", b.n, len(dst))
	}
	err := b.d.do(func() error {
		if err := b.checkLive(); err != nil {
			return err
		}
		return b.d.drv.MemcpyDtoH(f32Bytes(dst), b.ptr)
	})
	if err != nil {
		return fmt.Errorf("CUDA Download of %d floats: %w", b.n, err)
	}
	return nil
}

// Free releases the buffer. Freeing it twice is an error.
func (b *Buffer) Free() error {
	err := b.d.do(func() error {
		if b.base != nil {
			return errors.New("a view into another buffer: free that one")
		}
		if err := b.checkLive(); err != nil {
			return err
		}
		if err := b.d.drv.MemFree(b.ptr); err != nil {
			return err // still counted: Close tries again
		}
		delete(b.d.live, b.ptr)
		b.freed = true
		return nil
	})
	if err != nil {
		return fmt.Errorf("CUDA Free of %d floats: %w", b.n, err)
	}
	return nil
}

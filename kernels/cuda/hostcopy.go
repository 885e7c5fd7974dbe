package cuda

import (
	"errors"
	"fmt"
	"sort"
	"unsafe"

	"github.com/hone-rl/hone/kernels"
)

var _ kernels.HostCopier = (*Backend)(nil)

// CopyToHost implements kernels.HostCopier: src, a view of one of the
// backend's allocations, goes to dst, host memory that is none of the
// backend's device memory, in one cuMemcpyDtoH_v2 (a bulk transfer, where
// a host read of the managed memory would migrate it page by page on
// faults): by DMA into AllocHostF32's page-locked memory, through the
// driver's staging buffers into Go memory. The device
// has finished every earlier op (each ends synchronized). A src outside the
// backend's memory, or a dst overlapping it, panics naming the op and the
// argument; so does a failed copy.
func (b *Backend) CopyToHost(dst, src []float32, n int) {
	const op = "CopyToHost"
	kernels.NeedCopyToHost(dst, src, n)
	if n == 0 {
		return
	}
	dst, src = dst[:n], src[:n]
	b.onDevice(op, func() error {
		s := b.f32(op, "src", src)
		if addr := uintptr(unsafe.Pointer(&dst[0])); b.overlaps(addr, 4*n) {
			panic(fmt.Sprintf("kernels.%s: dst (%d values at %#x) is memory of the CUDA backend: CopyToHost writes host memory (use Copy between the backend's buffers)", op, n, addr))
		}
		return s.Download(dst)
	})
}

var _ kernels.HostUploader = (*Backend)(nil)

// UploadBF16 implements kernels.HostUploader: src, host memory, goes to
// dst, a view of one of the backend's allocations, in one cuMemcpyHtoD_v2
// of exactly 2·len(dst) bytes (a bulk transfer, where a host write of the
// managed memory would migrate its pages by faults). The device has
// finished every earlier op (each ends synchronized; in the stream-ordered
// mode the copy waits for the queue). A dst outside the backend's memory,
// or a src overlapping it, panics naming the op and the argument; so does
// a failed copy.
func (b *Backend) UploadBF16(dst, src []uint16) {
	const op = "UploadBF16"
	kernels.Need(op, "src", len(src), len(dst))
	if len(dst) == 0 {
		return
	}
	src = src[:len(dst)]
	b.onDevice(op, func() error {
		addr := uintptr(unsafe.Pointer(&dst[0]))
		if b.find(addr, 2*len(dst)) == nil {
			foreign(op, "dst", len(dst), addr)
		}
		if s := uintptr(unsafe.Pointer(&src[0])); b.overlaps(s, 2*len(src)) {
			panic(fmt.Sprintf("kernels.%s: src (%d values at %#x) is memory of the CUDA backend: UploadBF16 reads host memory (use Copy between the backend's buffers)", op, len(src), s))
		}
		if err := b.d.Synchronize(); err != nil {
			return err
		}
		return b.d.do(func() error {
			return b.d.drv.MemcpyHtoD(DevPtr(addr), unsafe.Slice((*byte)(unsafe.Pointer(&src[0])), 2*len(src)))
		})
	})
}

// overlaps reports whether any byte of [addr, addr+bytes) lies in one of
// the backend's allocations; b.mu is held. Allocations are disjoint and
// sorted, so only the last one starting before the end can reach addr.
func (b *Backend) overlaps(addr uintptr, bytes int) bool {
	end := addr + uintptr(bytes)
	i := sort.Search(len(b.allocs), func(i int) bool { return uintptr(b.allocs[i].buf.ptr) >= end }) - 1
	if i < 0 {
		return false
	}
	a := b.allocs[i]
	return uintptr(a.buf.ptr)+uintptr(a.buf.n)*4 > addr
}

// AllocHostF32 implements kernels.HostCopier: n zeroed float32 values of
// page-locked host memory (cuMemAllocHost_v2), which CopyToHost fills by
// DMA. It is host memory: the ops refuse it (RowMax and ExpShift aside).
// FreeHostF32 releases it; Close frees what is left and says so.
func (b *Backend) AllocHostF32(n int) ([]float32, error) {
	if n < 0 {
		return nil, fmt.Errorf("CUDA backend AllocHostF32: %d values", n)
	}
	if n == 0 {
		return []float32{}, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, fmt.Errorf("CUDA backend AllocHostF32: %w", errClosed)
	}
	var p unsafe.Pointer
	err := b.d.do(func() error {
		var err error
		p, err = b.d.drv.MemAllocHost(4 * n)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("CUDA backend AllocHostF32 of %d values: %w", n, err)
	}
	s := unsafe.Slice((*float32)(p), n)
	clear(s) // cuMemAllocHost leaves the memory as it was
	if b.pinned == nil {
		b.pinned = map[unsafe.Pointer]int{}
	}
	b.pinned[p] = n
	return s, nil
}

// FreeHostF32 releases a slice AllocHostF32 returned. A slice that is not
// one (a view, memory from elsewhere, one freed already) panics.
func (b *Backend) FreeHostF32(s []float32) {
	if len(s) == 0 {
		return
	}
	p := unsafe.Pointer(&s[0])
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		panic("kernels/cuda: FreeHostF32 after Close")
	}
	if n, ok := b.pinned[p]; !ok || n != len(s) {
		panic(fmt.Sprintf("kernels/cuda: FreeHostF32 of %d values at %p: not a whole allocation of AllocHostF32's (a view, or freed already)", len(s), p))
	}
	if err := b.d.do(func() error { return b.d.drv.MemFreeHost(p) }); err != nil {
		panic(fmt.Sprintf("kernels/cuda: FreeHostF32: %v", err))
	}
	delete(b.pinned, p)
}

// freeHostAll frees the AllocHostF32 allocations left at Close and names
// them in its error; b.mu is held.
func (b *Backend) freeHostAll() error {
	if len(b.pinned) == 0 {
		return nil
	}
	values := 0
	var errs []error
	for p, n := range b.pinned {
		values += n
		errs = append(errs, b.d.do(func() error { return b.d.drv.MemFreeHost(p) }))
	}
	errs = append([]error{fmt.Errorf("CUDA backend closed with %d host allocations (%d values) not freed", len(b.pinned), values)}, errs...)
	b.pinned = nil
	return errors.Join(errs...)
}

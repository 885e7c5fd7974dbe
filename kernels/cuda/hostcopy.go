package cuda

import (
	"fmt"
	"sort"
	"unsafe"

	"github.com/hone-rl/hone/kernels"
)

var _ kernels.HostCopier = (*Backend)(nil)

// CopyToHost implements kernels.HostCopier: src, a view of one of the
// backend's allocations, goes to dst, host memory that is none of the
// backend's, in one cuMemcpyDtoH_v2 (a bulk transfer, where a host read of
// the managed memory would migrate it page by page on faults). The device
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

package hugepage

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Advise asks for huge pages over the Size-aligned interior of b and returns
// how many bytes it advised (0 when b holds no whole huge page or the kernel
// refused). The contents of b are unchanged.
func Advise(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	off, n := interior(uintptr(unsafe.Pointer(&b[0])), len(b))
	if n == 0 {
		return 0
	}
	r := b[off : off+n]
	if err := unix.Madvise(r, unix.MADV_HUGEPAGE); err != nil {
		return 0 // THP compiled out or disabled ("never"): nothing to do
	}
	// Pages already faulted in as 4 KiB stay so until khugepaged gets to
	// them (minutes for gigabytes at its default pace); collapse them now.
	// Older kernels answer EINVAL, and the advice above still covers pages
	// faulted in later.
	_ = unix.Madvise(r, unix.MADV_COLLAPSE)
	return n
}

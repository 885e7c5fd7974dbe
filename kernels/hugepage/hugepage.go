package hugepage

import "unsafe"

// Size is the huge-page size this package aligns to (x86-64 and arm64 with
// 4 KiB base pages).
const Size = 2 << 20

// interior returns the offset and length of the largest Size-aligned range
// inside [p, p+n); length 0 when there is none.
func interior(p uintptr, n int) (off, length int) {
	start := (p + Size - 1) &^ (Size - 1)
	end := (p + uintptr(n)) &^ (Size - 1)
	if end <= start {
		return 0, 0
	}
	return int(start - p), int(end - start)
}

// Float32s advises the memory of s; see Advise.
func Float32s(s []float32) int {
	if len(s) == 0 {
		return 0
	}
	return Advise(unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*4))
}

// Uint16s advises the memory of s; see Advise.
func Uint16s(s []uint16) int {
	if len(s) == 0 {
		return 0
	}
	return Advise(unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*2))
}

//go:build !linux

package hugepage

// Advise does nothing on systems without madvise huge pages; it returns 0.
func Advise(b []byte) int { return 0 }

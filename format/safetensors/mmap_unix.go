//go:build unix

package safetensors

import (
	"os"
	"syscall"
)

// mapFile maps size bytes of f read-only. The pages are read from disk only when a
// tensor's bytes are first touched, which is what makes opening a checkpoint cheap.
func mapFile(f *os.File, size int64) ([]byte, func() error, error) {
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return b, func() error { return syscall.Munmap(b) }, nil
}

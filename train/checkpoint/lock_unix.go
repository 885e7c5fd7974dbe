//go:build unix

package checkpoint

import (
	"errors"
	"os"
	"syscall"
)

// tryLockFile takes f's exclusive flock without waiting; held says another
// process has it. The kernel drops a dead process's flock.
func tryLockFile(f *os.File) (held bool, err error) {
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	return false, err
}

func unlockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}

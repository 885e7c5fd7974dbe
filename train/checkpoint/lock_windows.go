//go:build windows

package checkpoint

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// tryLockFile locks f's first byte exclusively without waiting, the
// Windows counterpart of flock; held says another process has it. Windows
// drops the lock when the process's handle is closed, so also at exit.
func tryLockFile(f *os.File) (held bool, err error) {
	var ov windows.Overlapped
	err = windows.LockFileEx(windows.Handle(f.Fd()),
		windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ov)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return true, nil
	}
	return false, err
}

func unlockFile(f *os.File) error {
	var ov windows.Overlapped
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ov)
}

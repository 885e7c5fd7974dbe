package runfolder

import (
	"errors"

	"golang.org/x/sys/unix"
)

// swapFolders exchanges the folders a and b in one step (renameat2's
// RENAME_EXCHANGE), so that a reader of b finds the old folder or the new
// one, never neither; a file system without the exchange (EINVAL, ENOSYS)
// takes the two renames of swapByRenames.
func swapFolders(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		return swapByRenames(a, b)
	}
	return err
}

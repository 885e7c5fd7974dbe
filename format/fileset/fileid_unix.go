//go:build unix

package fileset

import (
	"fmt"
	"os"
	"syscall"
)

// fileID is the device and inode of a local file's stat ("dev:ino"), or
// "" where the stat has none.
func fileID(st os.FileInfo) string {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%d:%d", s.Dev, s.Ino)
	}
	return ""
}

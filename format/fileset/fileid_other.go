//go:build !unix

package fileset

import "os"

// fileID is "" where the stat names no inode: size and time alone tell a
// file's versions apart there.
func fileID(os.FileInfo) string { return "" }

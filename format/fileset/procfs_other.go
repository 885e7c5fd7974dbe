//go:build !linux

package fileset

import (
	"path/filepath"
	"strings"
)

// onProcFS says whether dir holds links to a process's open files: the
// BSDs' and macOS's /dev/fd (fdescfs), where /dev/stdout leads.
func onProcFS(dir string) bool {
	d := filepath.Clean(dir)
	return d == "/dev/fd" || strings.HasPrefix(d, "/proc/")
}

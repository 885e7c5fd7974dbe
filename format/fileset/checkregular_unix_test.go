//go:build unix

package fileset

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestCheckRegular: a regular file (or a link to one) passes; a named
// pipe, a device and a folder are refused naming the path and what it is,
// wrapping ErrNotRegular; a missing path gives Stat's not-exist error.
func TestCheckRegular(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{file, link} {
		if err := CheckRegular(p); err != nil {
			t.Errorf("CheckRegular(%s) = %v, want nil", p, err)
		}
	}
	for p, kind := range map[string]string{fifo: "a named pipe", "/dev/null": "a character device", dir: "a folder"} {
		err := CheckRegular(p)
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), kind) {
			t.Errorf("CheckRegular(%s) = %v, want ErrNotRegular naming it as %s", p, err, kind)
		}
	}
	if err := CheckRegular(filepath.Join(dir, "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v, want not-exist", err)
	}
}

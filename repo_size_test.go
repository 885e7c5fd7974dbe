package hone

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// maxTrackedFileBytes bounds every file in the repository. The largest
// legitimate ones are gzipped tokenizers (about 2.2 MB); a built binary
// (60–90 MB) committed by mistake is what this catches, before it lands in
// history for every clone.
const maxTrackedFileBytes = 4 << 20

// TestNoLargeTrackedFiles fails when git tracks a file over the bound.
func TestNoLargeTrackedFiles(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("git is needed under CI to list tracked files: %v", err)
		}
		t.Skip("git not installed")
	}
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("git ls-files: %v", err)
		}
		t.Skipf("not a git checkout: %v", err)
	}
	var checked int
	for _, name := range bytes.Split(out, []byte{0}) {
		if len(name) == 0 {
			continue
		}
		info, err := os.Lstat(string(name))
		if err != nil {
			continue // deleted in the work tree, not yet committed
		}
		checked++
		if info.Mode().IsRegular() && info.Size() > maxTrackedFileBytes {
			t.Errorf("%s is %d bytes, over the %d-byte bound for tracked files (a build output committed by mistake? .gitignore it)", name, info.Size(), maxTrackedFileBytes)
		}
	}
	if checked == 0 {
		t.Fatalf("git ls-files listed no files: %q", strings.TrimSpace(string(out)))
	}
}

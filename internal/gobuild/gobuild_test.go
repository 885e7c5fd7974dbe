package gobuild

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommands builds a command of the module twice into two folders: each
// holds a working, stripped executable named after the package's folder;
// the second build comes from the cache and is the same file.
func TestCommands(t *testing.T) {
	var bins [2][]byte
	for i := range bins {
		dir := t.TempDir()
		if err := Commands(context.Background(), dir, "../../cmd/hone-inspect"); err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(dir, "hone-inspect")
		out, err := exec.Command(bin, "--help").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "hone-inspect") {
			t.Fatalf("%s --help: %v\n%s", bin, err, out)
		}
		if bins[i], err = os.ReadFile(bin); err != nil {
			t.Fatal(err)
		}
		if names, err := exec.Command("go", "tool", "nm", bin).CombinedOutput(); err == nil {
			t.Errorf("%s has a symbol table (go tool nm: %.200s): want it built with -s -w", bin, names)
		}
	}
	if string(bins[0]) != string(bins[1]) {
		t.Error("the second build differs from the first")
	}
}

// TestCommandsErrors: a package that does not build, and a folder that
// cannot pass through -exec, fail with errors that name them.
func TestCommandsErrors(t *testing.T) {
	dir := t.TempDir()
	err := Commands(context.Background(), dir, "./no-such-package", "../../cmd/hone-inspect")
	if err == nil || !strings.Contains(err.Error(), "no-such-package") {
		t.Errorf("a missing package: %v", err)
	}
	if _, serr := os.Stat(filepath.Join(dir, "hone-inspect")); serr != nil {
		t.Errorf("the package that builds was not built beside the failing one: %v", serr)
	}
	if err := Commands(context.Background(), filepath.Join(dir, "it's"), "."); err == nil || !strings.Contains(err.Error(), "it's") {
		t.Errorf("a folder with a quote: %v", err)
	}
}

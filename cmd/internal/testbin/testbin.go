// Package testbin builds the binaries a command's tests run as real
// processes, once per test binary.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Main builds each package (a path relative to the test's directory; "."
// is the command under test) into a new temporary directory, each under its
// directory's name, calls ready with that directory, runs the tests, and
// exits with their code after removing the directory. Binaries are built
// without symbols, by one go build: they link faster, and in parallel.
func Main(m *testing.M, ready func(dir string), pkgs ...string) {
	dir, err := os.MkdirTemp("", "hone-testbin-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// -o naming a directory writes each main package there under the last
	// element of its import path, which is its directory's name.
	args := []string{"build", "-ldflags=-s -w", "-o", dir + string(filepath.Separator)}
	build := exec.Command("go", append(args, pkgs...)...)
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "build %v: %v\n", pkgs, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	ready(dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

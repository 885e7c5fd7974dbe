// Package testbin builds the binaries a command's tests run as real
// processes, once per test binary.
package testbin

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/hone-rl/hone/internal/gobuild"
)

// Main builds each package (a path relative to the test's directory; "."
// is the command under test) into a new temporary directory, each under its
// directory's name, calls ready with that directory, runs the tests, and
// exits with their code after removing the directory. Binaries are built
// without symbols by gobuild.Commands, which takes them from Go's build
// cache while nothing they are built from changed.
func Main(m *testing.M, ready func(dir string), pkgs ...string) {
	dir, err := os.MkdirTemp("", "hone-testbin-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := gobuild.Commands(context.Background(), dir, pkgs...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	ready(dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

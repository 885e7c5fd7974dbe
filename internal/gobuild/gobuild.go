// Package gobuild builds this module's commands for the tests that run
// them as real processes (imported by tests only).
//
// Why not go build -o: it links every time, 4 s of a core for each of the
// five large stage binaries, and one make test builds them about thirty
// times over (each command's tests, the pipelines' tests, the proxy's, the
// device check's, again under -race). go run keeps the executables it
// links in Go's build cache (since Go 1.24) and reuses them while nothing
// they are built from changed; its -exec hands the cached executable to a
// program of ours, cp, which copies it out. A cache miss links as go build
// would.
package gobuild

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
)

// Commands builds each main package in pkgs (import paths, or paths
// relative to the current directory: "." is the package of the test
// calling it) without symbols into the existing folder dir, as
// dir/<last element of the package's directory>, the name go build -o dir/
// gives it. The packages build concurrently; the error names each that
// failed, with the go command's output.
func Commands(ctx context.Context, dir string, pkgs ...string) error {
	if strings.ContainsAny(dir, `'"\`) {
		return fmt.Errorf("gobuild: folder %q: quotes and backslashes cannot pass through go run -exec", dir)
	}
	errs := make([]error, len(pkgs))
	var wg sync.WaitGroup
	for i, pkg := range pkgs {
		wg.Go(func() {
			// go run runs `cp -t 'dir' <executable>` instead of the
			// executable; -exec's words are split as quoted fields.
			cmd := exec.CommandContext(ctx, "go", "run", "-ldflags=-s -w", "-exec", "cp -t '"+dir+"'", pkg)
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("go run -exec cp %s: %w\n%s", pkg, err, out)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("gobuild: %w", err)
	}
	return nil
}

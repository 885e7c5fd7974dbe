package hone

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestCrossBuild compiles every package for other systems (pure Go, as a
// release build without cgo would): a Linux-only call (flock, dup,
// getrusage) outside a build-tagged file fails it. go list -export compiles
// without linking, so a warm run takes about a second a system; a cold one
// compiles every dependency again for each, minutes on 2 cores, so make
// test checks macOS alone (where the commands build too) and make
// test-cross all three (HONE_CROSS_GOOS: the systems, space-separated).
func TestCrossBuild(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		if os.Getenv("CI") == "" {
			t.Skip("no go command on PATH")
		}
		t.Fatal(err)
	}
	systems := strings.Fields(os.Getenv("HONE_CROSS_GOOS"))
	if len(systems) == 0 {
		systems = []string{"darwin"}
	}
	for _, goos := range systems {
		t.Run(goos, func(t *testing.T) {
			cmd := exec.CommandContext(context.Background(), "go", "list", "-e", "-deps", "-export", "-json=ImportPath,Error", "./...")
			cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0")
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("go list for %s: %v", goos, err)
			}
			// With -e a package that does not compile carries its
			// compiler output in Error; the packages importing it are not
			// compiled.
			dec := json.NewDecoder(bytes.NewReader(out))
			for {
				var p struct {
					ImportPath string
					Error      *struct{ Err string }
				}
				if err := dec.Decode(&p); err == io.EOF {
					break
				} else if err != nil {
					t.Fatalf("go list for %s: %v", goos, err)
				}
				if p.Error != nil && !exempt(goos, p.ImportPath) {
					t.Errorf("GOOS=%s: %s does not compile:\n%s", goos, p.ImportPath, p.Error.Err)
				}
			}
		})
	}
}

// exempt says whether TestCrossBuild allows pkg's compile errors: the
// CUDA loader (kernels/cuda) dlopens libcuda through purego, which has no
// Windows dlopen and whose FreeBSD runtime shim needs cgo. Everything that
// imports kernels/cuda (the commands) is then not compiled for those
// systems at all, which this test cannot see. On macOS purego needs no
// cgo, and everything is compiled.
func exempt(goos, pkg string) bool {
	if goos == "darwin" {
		return false
	}
	for _, p := range []string{"github.com/hone-rl/hone/kernels/cuda", "github.com/ebitengine/purego"} {
		if pkg == p || strings.HasPrefix(pkg, p+"/") {
			return true
		}
	}
	return false
}

package envtest

import (
	"os/exec"
	"strings"
	"testing"
)

// Python returns the real interpreter behind python3, for tests that run
// an environment program in Python. It is resolved once (sys.executable):
// a shim such as pyenv's costs a second a start, and environments start
// a program an episode. Without python3 the test skips, except when ci
// (the caller's test read $CI: only cmd reads the environment,
// TestContractEnvironmentOnlyInCmd), where a skip would hide that the
// test never ran.
func Python(t testing.TB, ci bool) string {
	t.Helper()
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	p := strings.TrimSpace(string(out))
	if err != nil || p == "" {
		if ci {
			t.Fatalf("python3 not on PATH: %v", err)
		}
		t.Skip("python3 not on PATH")
	}
	return p
}

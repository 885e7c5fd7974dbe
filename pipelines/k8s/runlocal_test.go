package k8s

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/internal/gobuild"
)

// runlocal exits as the hone commands do, so that a script running rounds
// tells a mistake from a failure: a step's own exit code (2 from a hone
// command given a flag it does not have, 1 from a failure) is runlocal's,
// and a parameter the template lacks is a usage error, exit 2, before any
// step runs. Every failure exited 1 before.
func TestRunlocalExitCodes(t *testing.T) {
	binaries(t, "hone-collect")
	dir := t.TempDir()
	if err := gobuild.Commands(context.Background(), dir, "./runlocal"); err != nil {
		t.Fatal(err)
	}
	failing := filepath.Join(dir, "fail.yaml")
	doc := `apiVersion: argoproj.io/v1alpha1
kind: WorkflowTemplate
metadata:
  name: fail
spec:
  entrypoint: step
  templates:
    - name: step
      container:
        command: [sh, -c]
        args: ["echo failing >&2; exit 1"]
`
	if err := os.WriteFile(failing, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		why  string
		args []string
		code int
		says string
	}{
		{"a flag hone-collect does not have", []string{"--bin", bin, "-p", "collect-flags=--no-such-flag", "-p", "shards=2"}, 2, "no-such-flag"},
		{"a parameter round.yaml does not have", []string{"--bin", bin, "-p", "shard-count=2"}, 2, "shard-count"},
		{"a step that fails", []string{"-f", failing}, 1, "failing"},
	} {
		cmd := exec.Command(filepath.Join(dir, "runlocal"), append([]string{"-f", "round.yaml"}, tc.args...)...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != tc.code || !strings.Contains(string(out), tc.says) {
			t.Errorf("%s: runlocal %q: %v, want exit %d saying %q:\n%s", tc.why, tc.args, err, tc.code, tc.says, out)
		}
	}
}

package k8s

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/internal/gobuild"
)

// TestRunlocalLogMasksStorePassword: runlocal logs each step's command
// line before its output, and logged it as filled, so a store reached by
// an endpoint with a password (-p query='?endpoint=http://user:PW@host…',
// docs/cluster.md) showed the password on every step's line, where the
// hone commands' own lines below it mask it. The line masks it now, as
// they do (endpoint=http://user:REDACTED@host).
func TestRunlocalLogMasksStorePassword(t *testing.T) {
	const secret = "PassW0rdXYZ"
	dir := t.TempDir()
	if err := gobuild.Commands(context.Background(), dir, "./runlocal"); err != nil {
		t.Fatal(err)
	}
	tmpl := filepath.Join(dir, "step.yaml")
	doc := `apiVersion: argoproj.io/v1alpha1
kind: WorkflowTemplate
metadata:
  name: step
spec:
  entrypoint: step
  arguments:
    parameters:
      - name: store
        value: s3://hone
      - name: query
        value: ""
  templates:
    - name: step
      container:
        command: [sh, -c]
        args: ["true '{{workflow.parameters.store}}/adapters{{workflow.parameters.query}}'; echo step ran"]
`
	if err := os.WriteFile(tmpl, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	query := "?endpoint=http://bob:" + secret + "@127.0.0.1:9000&use_path_style=true&disable_https=true&region=us-east-1"
	out, err := exec.Command(filepath.Join(dir, "runlocal"), "-f", tmpl, "-p", "query="+query).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "step ran") {
		t.Fatalf("runlocal: %v\n%s", err, out)
	}
	if strings.Contains(string(out), secret) {
		t.Errorf("runlocal's log shows the endpoint's password:\n%s", out)
	}
	if !strings.Contains(string(out), "s3://hone/adapters?endpoint=http://bob:REDACTED@127.0.0.1:9000") {
		t.Errorf("runlocal's log does not show the step's store URL, masked:\n%s", out)
	}
}

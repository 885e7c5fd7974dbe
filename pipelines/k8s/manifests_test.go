package k8s

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yannh/kubeconform/pkg/validator"
	"sigs.k8s.io/yaml"
)

// schemaLocation is where kubeconform finds the vendored schemas
// (testdata/schemas/gen.py writes them from Argo's own JSON schema); no
// schema is fetched over the network.
const schemaLocation = "testdata/schemas/{{ .ResourceKind }}{{ .KindSuffix }}.json"

func validate(t *testing.T, name string, r io.Reader) []validator.Result {
	t.Helper()
	v, err := validator.New([]string{schemaLocation}, validator.Opts{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	return v.Validate(name, io.NopCloser(r))
}

// The Argo manifests validate, strictly, against Argo v3.7.9's schemas.
func TestArgoManifestsValidate(t *testing.T) {
	for _, name := range []string{"round.yaml", "cron.yaml"} {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		res := validate(t, name, f)
		f.Close()
		valid := 0
		for _, r := range res {
			switch r.Status {
			case validator.Valid:
				valid++
			case validator.Empty:
			default:
				t.Errorf("%s: %v %v %v", name, r.Status, r.Err, r.ValidationErrors)
			}
		}
		if valid != 1 {
			t.Errorf("%s: %d valid resources, want 1", name, valid)
		}
	}
}

// A misspelt field, a wrong type and a missing required field each fail:
// the schemas are strict, so the test above can fail.
func TestArgoManifestTyposFail(t *testing.T) {
	b, err := os.ReadFile("round.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ from, to string }{
		{"withSequence:", "withSequnce:"},
		{"command: [sh, -c]", "comand: [sh, -c]"},
		{"entrypoint: round", "entrypoint: [round]"},
		{"          - name: collect\n            template: collect", "          - template: collect"},
	} {
		if !strings.Contains(string(b), tc.from) {
			t.Fatalf("round.yaml has no %q to change", tc.from)
		}
		bad := strings.Replace(string(b), tc.from, tc.to, 1)
		res := validate(t, "round.yaml", strings.NewReader(bad))
		invalid := false
		for _, r := range res {
			invalid = invalid || r.Status == validator.Invalid
		}
		if !invalid {
			t.Errorf("%q → %q still validates", tc.from, tc.to)
		}
	}
}

// serve.yaml's Deployment runs hone-serve with flags hone-serve has: the
// binary parses them all before it answers --help, so an unknown or
// misspelt one fails. Its probes ask /health, which hone-serve answers
// (TestRoundOverFakeS3 waits on it). No schema for the core Kubernetes
// kinds is vendored here, so kubeconform does not check this file.
func TestServeManifestFlags(t *testing.T) {
	b, err := os.ReadFile("serve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var dep struct {
		Kind string `json:"kind"`
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Args           []string `json:"args"`
						ReadinessProbe struct {
							HTTPGet struct {
								Path string `json:"path"`
							} `json:"httpGet"`
						} `json:"readinessProbe"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(strings.Split(string(b), "\n---\n")[0]), &dep); err != nil {
		t.Fatal(err)
	}
	if dep.Kind != "Deployment" || len(dep.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("serve.yaml's first document: kind %q, %d containers", dep.Kind, len(dep.Spec.Template.Spec.Containers))
	}
	c := dep.Spec.Template.Spec.Containers[0]
	if len(c.Args) < 2 || c.Args[0] != "hone-serve" || c.ReadinessProbe.HTTPGet.Path != "/health" {
		t.Fatalf("container args %q, readiness %q", c.Args, c.ReadinessProbe.HTTPGet.Path)
	}
	binaries(t, "hone-serve")
	cmd := exec.Command(filepath.Join(bin, "hone-serve"), append(c.Args[1:], "--help")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("hone-serve %q --help: %v\n%s", c.Args[1:], err, out)
	}
	bad := exec.Command(filepath.Join(bin, "hone-serve"), "--adapter-cache=/x", "--help")
	if err := bad.Run(); err == nil {
		t.Error("a misspelt flag passed: the check cannot fail")
	}
}

package k8s

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/yannh/kubeconform/pkg/validator"
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

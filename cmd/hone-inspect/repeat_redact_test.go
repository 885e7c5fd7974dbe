package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/internal/fakes3d"
)

// TestRepeatedObjectHidesEndpointPassword: an object-store input named
// twice is named once on stderr ("named again, read once") with its
// endpoint's password masked, as every other message quoting such a URL
// masks it. The warning printed the name as written, password and all.
func TestRepeatedObjectHidesEndpointPassword(t *testing.T) {
	dir, _, _ := fixtures(t)
	s3 := fakes3d.StartTest(t, "runs")
	b, err := os.ReadFile(filepath.Join(dir, "a.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if r := run(t, b, "cat", "-o", s3.URL("runs", "a.parquet"), "-"); r.code != 0 {
		t.Fatalf("cat to S3: exit %d\n%s", r.code, r.stderr)
	}
	const secret = "PWSECRET77"
	in := strings.Replace(s3.URL("runs", "a.parquet"), "endpoint=http://", "endpoint=http://me:"+secret+"@", 1)
	for _, cmd := range []string{"stats", "validate"} {
		r := run(t, nil, cmd, in, in)
		if r.code != 0 || !strings.Contains(r.stderr, "named again, read once") {
			t.Fatalf("%s: exit %d, want 0 naming the repeat:\n%s", cmd, r.code, r.stderr)
		}
		if strings.Contains(r.stderr, secret) {
			t.Errorf("%s prints the endpoint's password:\n%s", cmd, r.stderr)
		}
	}
}

package main

import (
	"strings"
	"testing"

	"github.com/hone-rl/hone/internal/fakes3d"
)

// TestEscapedEndpointPasswordHidden: an input on a bucket that is not
// there, its endpoint parameter written percent-escaped whole
// (endpoint=http%3A%2F%2Fme%3APASSWORD%40host, or a token as the user),
// fails each command (report on a run there too) with an error that names the store's host and not
// the password. stderr printed it whole: only ':PASSWORD@' written plain
// was masked.
func TestEscapedEndpointPasswordHidden(t *testing.T) {
	s3 := fakes3d.StartTest(t, "runs")
	const secret = "PWSECRET77x"
	host := strings.TrimPrefix(s3.Endpoint, "http://")
	plain := s3.URL("nobkt", "a.parquet")
	for _, userinfo := range []string{"me%3A" + secret, secret} {
		ep := "http%3A%2F%2F" + userinfo + "%40" + strings.ReplaceAll(host, ":", "%3A")
		in := strings.Replace(plain, "endpoint="+s3.Endpoint, "endpoint="+ep, 1)
		if in == plain {
			t.Fatalf("the endpoint %s is not in %s", s3.Endpoint, plain)
		}
		folder := strings.Replace(in, "a.parquet", "run", 1)
		for _, args := range [][]string{{"stats", in}, {"validate", in}, {"cat", "-o", in, in}, {"report", "-o", t.TempDir() + "/r.html", folder}} {
			r := run(t, nil, args...)
			if r.code == 0 {
				t.Fatalf("%s on a missing bucket: exit 0\n%s", args[0], r.stderr)
			}
			if strings.Contains(r.stderr, secret) {
				t.Errorf("%s prints the endpoint's secret:\n%s", args[0], r.stderr)
			}
			if !strings.Contains(r.stderr, "nobkt") {
				t.Errorf("%s: want the error to name the bucket:\n%s", args[0], r.stderr)
			}
			// report names a run by its URL without the query.
			if args[0] != "report" && !strings.Contains(r.stderr, "127.0.0.1") {
				t.Errorf("%s: want the error to name the store's host:\n%s", args[0], r.stderr)
			}
		}
	}
}

package fileset

import (
	"context"
	"strings"
	"testing"
)

// TestArgErrorsHideQuerySecrets: the errors that quote an object-store
// URL with its query (a parameter the driver does not know, a bucket
// that is not there) mask what may be a secret there, the value of a
// parameter other than the store's known settings and the password of
// the endpoint's user, and still name the parameter and the store. A
// key pasted into the query (secret_access_key=…, as other tools take
// it) was printed twice, into the logs of every pod that failed.
func TestArgErrorsHideQuerySecrets(t *testing.T) {
	s3 := newFaultyS3(t, "bkt")
	ctx := context.Background()
	t.Chdir(t.TempDir()) // the failed output's bytes are kept there
	const secret = "SUPERSECRETKEY42"
	check := func(what string, err error, wants ...string) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: %v; the secret is printed", what, err)
		}
		for _, w := range wants {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v; want it to say %q", what, err, w)
			}
		}
	}
	_, err := Resolve(ctx, []string{s3.url("bkt", "in/") + "&secret_access_key=" + secret}, Options{})
	check("an input with a key in its query", err, `unknown query parameter "secret_access_key"`, "secret_access_key=", "endpoint="+s3.srv.Endpoint)
	out, err := Create(ctx, s3.url("bkt", "out.parquet")+"&aws_secret="+secret)
	if err == nil {
		err = out.Commit()
	}
	check("an output with a key in its query", err, `unknown query parameter "aws_secret"`)

	withUser := strings.Replace(s3.url("nobkt", "x.parquet"), "endpoint=http://", "endpoint=http://me:"+secret+"@", 1)
	_, err = Resolve(ctx, []string{withUser}, Options{})
	check("a missing bucket on an endpoint with a password", err, "does not exist", "me:")
}

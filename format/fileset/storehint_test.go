package fileset

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/fileset/s3test"
)

// storeEnv is an environment for the AWS SDK with nothing of this
// machine's configuration: no endpoint, no profile, no instance role;
// keys only where withKeys.
func storeEnv(t *testing.T, withKeys bool) {
	t.Helper()
	dir := t.TempDir()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"} {
		t.Setenv(k, "")
	}
	if withKeys {
		t.Setenv("AWS_ACCESS_KEY_ID", "test")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	}
	t.Setenv("AWS_CONFIG_FILE", dir+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", dir+"/credentials")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_REGION", "us-east-1")
}

// TestStoreErrorSaysWhatToSet: the first errors of a run against an S3
// store other than AWS's (MinIO…) were the SDK's alone, which say what
// failed but not what to set: "lookup my-bucket.minio: no such host"
// where use_path_style is missing, "lookup …amazonaws.com: no such host"
// where the endpoint is, and "no EC2 IMDS role found … AWS_EC2_METADATA_
// DISABLED" where no keys are set. Each now says what to set, the
// endpoint's password still masked. The hosts are under .invalid, which
// no resolver answers: no request leaves the machine.
func TestStoreErrorSaysWhatToSet(t *testing.T) {
	const secret = "PassW0rdXYZ"
	ep := "http://bob:" + secret + "@store.invalid:9000"
	for _, c := range []struct {
		name, url, says string
		keys            bool
	}{
		{"no path style", "s3://my-bucket/x.parquet?endpoint=" + ep, "add use_path_style=true", true},
		{"endpoint does not resolve", "s3://my-bucket/x.parquet?use_path_style=true&endpoint=" + ep, "store.invalid does not resolve: check the endpoint", true},
		{"no keys", "s3://my-bucket/x.parquet?use_path_style=true&endpoint=" + ep, "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE", false},
		{"no keys, a folder", "s3://my-bucket/dir/?use_path_style=true&endpoint=" + ep, "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			storeEnv(t, c.keys)
			_, err := Resolve(context.Background(), []string{c.url}, Options{})
			if err == nil || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("error %v, want one saying %q", err, c.says)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error shows the endpoint's password: %v", err)
			}
		})
	}
}

// TestStoreErrorNoEndpointNamesIt: a bucket looked for on AWS (no
// endpoint in the URL or the environment) whose host does not resolve
// names the endpoint parameter and AWS_ENDPOINT_URL_S3. AWS's host names
// resolve where there is a network, so the error is the SDK's as it
// comes back (a *net.DNSError under its wrapping) rather than a lookup.
func TestStoreErrorNoEndpointNamesIt(t *testing.T) {
	dns := &net.DNSError{Err: "no such host", Name: "my-bucket.s3.us-east-1.amazonaws.com", IsNotFound: true}
	sdk := fmt.Errorf("operation error S3: HeadObject, https response error StatusCode: 0, request send failed: %w", &net.OpError{Op: "dial", Net: "tcp", Err: dns})
	err := blobErr("s3://my-bucket/x.parquet?region=us-east-1", sdk)
	for _, want := range []string{"?endpoint=http://minio:9000&use_path_style=true", "AWS_ENDPOINT_URL_S3", "no such host"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if got := blobErr("s3://my-bucket/x.parquet?endpoint=http://minio:9000", sdk).Error(); strings.Contains(got, "gives no endpoint") {
		t.Errorf("a URL with an endpoint is told it gives none: %s", got)
	}
}

// TestEndpointFromEnvironment: AWS_ENDPOINT_URL_S3, which the hint above
// and docs/cluster.md name, points an s3:// URL without an endpoint at
// the store.
func TestEndpointFromEnvironment(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{Buckets: []string{"b"}})
	if err := WriteFile(context.Background(), srv.URL("b", "x.parquet"), []byte("PAR1")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ENDPOINT_URL", "")
	os.Unsetenv("AWS_ENDPOINT_URL") // restored by Setenv's cleanup
	t.Setenv("AWS_ENDPOINT_URL_S3", srv.Endpoint)
	fi, err := StatFile(context.Background(), "s3://b/x.parquet?use_path_style=true&region=us-east-1")
	if err != nil || fi.Size != 4 {
		t.Fatalf("stat through AWS_ENDPOINT_URL_S3: %+v, %v", fi, err)
	}
}

// TestStoreHintPathStyleSpelledOtherwise: the SDK takes use_path_style
// (and its older name s3ForcePathStyle) as any strconv.ParseBool truth
// ("1", "True", "t"…), and with path style on it looks up the endpoint's
// own host. An endpoint whose host begins with the bucket's name
// (bucket "store" on store.invalid) that did not resolve was then told
// to add use_path_style=true, which it had: only "true" was read as set.
func TestStoreHintPathStyleSpelledOtherwise(t *testing.T) {
	for _, ps := range []string{"use_path_style=1", "use_path_style=True", "s3ForcePathStyle=true"} {
		t.Run(ps, func(t *testing.T) {
			storeEnv(t, true)
			_, err := Resolve(context.Background(), []string{"s3://store/x.parquet?endpoint=http://store.invalid:9000&" + ps}, Options{})
			if err == nil || strings.Contains(err.Error(), "add use_path_style") || !strings.Contains(err.Error(), "store.invalid does not resolve") {
				t.Fatalf("error %v, want one saying store.invalid does not resolve, not to add use_path_style", err)
			}
		})
	}
}

// TestStoreHintAWSRegion: AWS answers every bucket name under a real
// region's host (a wildcard), so "no such host" for an AWS host most
// often means a region that is no region (us-eats-1, from the URL or
// AWS_REGION) or a resolver that cannot reach AWS. The hint spoke only
// of another store's endpoint, and an AWS endpoint given in the URL was
// told to add use_path_style=true "which a store such as MinIO does not
// serve".
func TestStoreHintAWSRegion(t *testing.T) {
	host := "my-bucket.s3.us-eats-1.amazonaws.com"
	dns := &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	sdk := fmt.Errorf("operation error S3: HeadObject, https response error StatusCode: 0, request send failed: %w", &net.OpError{Op: "dial", Net: "tcp", Err: dns})
	for _, name := range []string{
		"s3://my-bucket/x.parquet?region=us-eats-1",
		"s3://my-bucket/x.parquet?region=us-eats-1&endpoint=https://s3.us-eats-1.amazonaws.com",
	} {
		got := blobErr(name, sdk).Error()
		if !strings.Contains(got, "check the region") || strings.Contains(got, "add use_path_style") {
			t.Errorf("%s: error %q, want it to say to check the region, and not to add use_path_style", name, got)
		}
	}
}

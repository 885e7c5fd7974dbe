package fileset

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestInstanceMetadataRefusalIsMissingKeys: a metadata service that
// refuses the SDK's requests for good (another cloud's at the same
// address: Azure's answers 400 to a request without its header, GCE's
// 403) has no role to give, as one that answers 404 has none. Only a
// 404 was taken for missing keys, so a stage on such a host with no keys
// set failed as a failure to retry, without the hint to set them; only a
// busy service (429, 5xx) is one now.
func TestInstanceMetadataRefusalIsMissingKeys(t *testing.T) {
	for _, c := range []struct {
		name             string
		tokenStatus, get int
		noKeys           bool
	}{
		{"token refused 400", http.StatusBadRequest, http.StatusBadRequest, true},
		{"role forbidden 403", http.StatusForbidden, http.StatusForbidden, true},
		{"throttled 429", http.StatusOK, http.StatusTooManyRequests, false},
	} {
		imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			status := c.get
			if r.Method == http.MethodPut { // the session token: IMDSv2
				status = c.tokenStatus
			}
			if status == http.StatusOK {
				w.Write([]byte("token"))
				return
			}
			http.Error(w, "the test's metadata service", status)
		}))
		storeEnv(t, false)
		t.Setenv("AWS_EC2_METADATA_DISABLED", "")
		t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.URL)
		err := CheckOutputObject(context.Background(), "s3://my-bucket/x.parquet?use_path_style=true&endpoint=http://store.invalid:9000")
		imds.Close()
		if err == nil {
			t.Fatalf("%s: no error", c.name)
		}
		if got := errors.Is(err, ErrNoCredentials); got != c.noKeys {
			t.Errorf("%s: ErrNoCredentials %v, want %v: %v", c.name, got, c.noKeys, err)
		}
	}
}

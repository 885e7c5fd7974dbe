package fileset

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestInstanceRoleUnansweredIsNoMissingKeys: the SDK says "no EC2 IMDS
// role found" for any failed request to the instance metadata service,
// one the service refused for now (throttled, 429; down, 503) too. Each
// was taken for missing keys, which a stage exits 2 on and a scheduler
// does not retry; an instance with a role whose metadata service was
// busy for a moment lost the round. The service's 404 (no role) is
// missing keys; its other answers are a failure to retry.
func TestInstanceRoleUnansweredIsNoMissingKeys(t *testing.T) {
	for _, c := range []struct {
		status int
		noKeys bool
	}{
		{http.StatusNotFound, true},
		{http.StatusServiceUnavailable, false},
	} {
		imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut { // the session token: IMDSv2
				w.Write([]byte("token"))
				return
			}
			http.Error(w, "the test's metadata service", c.status)
		}))
		storeEnv(t, false)
		t.Setenv("AWS_EC2_METADATA_DISABLED", "")
		t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.URL)
		err := CheckOutputObject(context.Background(), "s3://my-bucket/x.parquet?use_path_style=true&endpoint=http://store.invalid:9000")
		imds.Close()
		if err == nil {
			t.Fatalf("metadata service answering %d: no error", c.status)
		}
		if got := errors.Is(err, ErrNoCredentials); got != c.noKeys {
			t.Errorf("metadata service answering %d: ErrNoCredentials %v, want %v: %v", c.status, got, c.noKeys, err)
		}
	}
}

// Package s3test runs an S3 protocol server for a package's tests: gofakes3
// keeping its objects in memory, over real HTTP on a local port, with the
// AWS SDK pointed at it and kept off this machine's own AWS configuration.
// The tests of format and train, which may not import internal/fakes3d
// (policy_test.go), start their fake S3 here, each wrapping its handler
// with the counting or fault it needs. It imports nothing of ours, so
// fileset's own tests can use it.
package s3test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// Options are what a test sets of its server.
type Options struct {
	// Buckets are made before the server starts.
	Buckets []string
	// Wrap, if set, serves each request in place of the fake, which it is
	// given: it counts, holds back or fails requests before (or instead
	// of) passing them on.
	Wrap func(fake http.Handler) http.Handler
	// ConnState, if set, sees each connection's state changes (a test
	// counting the connections its client opens).
	ConnState func(net.Conn, http.ConnState)
}

// Server is a running fake S3, stopped when its test ends.
type Server struct {
	// Backend holds the objects: a test puts an object straight in it
	// (with the Last-Modified it chooses) or replaces one behind the
	// client's back.
	Backend *s3mem.Backend
	// Endpoint is the server's base URL, http://127.0.0.1:PORT.
	Endpoint string
}

// Start starts a fake S3 for t (see Options) and sets the environment the
// AWS SDK needs to sign its requests (the fake takes any keys) without
// reading this machine's AWS configuration or instance metadata.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	be := s3mem.New()
	for _, b := range o.Buckets {
		if err := be.CreateBucket(b); err != nil {
			t.Fatalf("fake S3: make bucket %q: %v", b, err)
		}
	}
	var h http.Handler = gofakes3.New(be).Server()
	if o.Wrap != nil {
		h = o.Wrap(h)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = o.ConnState
	srv.Start()
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	return &Server{Backend: be, Endpoint: srv.URL}
}

// Query is the URL query, with its "?", that points an s3:// URL at
// this server.
func (s *Server) Query() string {
	return "?endpoint=" + s.Endpoint + "&use_path_style=true&disable_https=true&region=us-east-1"
}

// URL names key in bucket on this server ("" names the bucket's top).
func (s *Server) URL(bucket, key string) string {
	return "s3://" + bucket + "/" + key + s.Query()
}

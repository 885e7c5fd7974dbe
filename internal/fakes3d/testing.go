package fakes3d

import (
	"context"
	"strings"
	"testing"
)

// StartTest starts a fake S3 with the named buckets for the test, sets
// the environment a client needs (Env) for it and its subprocesses, and
// stops the server when the test ends.
func StartTest(t testing.TB, buckets ...string) *Server {
	t.Helper()
	s, err := Start("127.0.0.1:0", buckets...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(context.Background()); err != nil {
			t.Errorf("fake S3: %v", err)
		}
	})
	for _, kv := range Env(t.TempDir()) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	return s
}

package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/fakes3d"
)

// TestAdaptersLogHidesEndpointPassword: --adapters naming a store by an
// endpoint with a user and password (http://user:PASSWORD@minio:9000)
// has the password masked where the log names the store. The
// Deployment's log printed it at start.
func TestAdaptersLogHidesEndpointPassword(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	s3 := fakes3d.StartTest(t, "hone")
	const secret = "PWSECRET77"
	adapters := strings.Replace(s3.URL("hone", "adapters"), "endpoint=http://", "endpoint=http://me:"+secret+"@", 1)
	var log bytes.Buffer
	var r remoteAdapters
	stop, err := r.start(context.Background(), &adapters, 10*time.Millisecond, 0, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if !strings.Contains(log.String(), "pulling adapters into a temporary folder") {
		t.Fatalf("the start is not logged:\n%s", log.String())
	}
	if strings.Contains(log.String(), secret) {
		t.Errorf("the log prints the endpoint's password:\n%s", log.String())
	}
}

// TestAdaptersDownErrorHidesEndpointPassword: a store that cannot be
// reached at start fails hone-serve with an error naming --adapters, its
// endpoint's password masked. "list s3://…?endpoint=…" printed it whole.
func TestAdaptersDownErrorHidesEndpointPassword(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	for _, kv := range fakes3d.Env(t.TempDir()) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	const secret = "PWSECRET77"
	// Port 1: nothing listens there, the connection is refused.
	adapters := "s3://hone/adapters?endpoint=http://me:" + secret + "@127.0.0.1:1&use_path_style=true&disable_https=true&region=us-east-1"
	var r remoteAdapters
	_, err := r.start(context.Background(), &adapters, 10*time.Millisecond, 0, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "s3://hone/adapters") || strings.Contains(err.Error(), secret) {
		t.Errorf("start against a store that is down: %v; want an error naming s3://hone/adapters without the password", err)
	}
}

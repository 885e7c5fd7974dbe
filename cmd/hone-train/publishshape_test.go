package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/fileset/s3test"
	"github.com/hone-rl/hone/format/runfolder"
)

// TestPublishFailureShapeIgnoresRequestIDs publishes to a store that
// refuses writes as S3 does, each answer carrying its own request id and
// host id (x-amz-request-id, x-amz-id-2: hex and base64, letters and
// digits), while training moves the local latest on: the same refusal is
// one error, warned at a doubling interval, however its ids and step
// numbers differ. Before, the
// comparison only turned digits into N, so every real S3 refusal was a new
// error and each tick warned. A refusal with another status is still a
// new error, warned about at once.
func TestPublishFailureShapeIgnoresRequestIDs(t *testing.T) {
	var mu sync.Mutex
	status, n := http.StatusForbidden, 0
	srv := s3test.Start(t, s3test.Options{Buckets: []string{"bkt"}, Wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPut {
				h.ServeHTTP(w, r)
				return
			}
			mu.Lock()
			n++
			code, id := status, n
			mu.Unlock()
			w.Header().Set("x-amz-request-id", fmt.Sprintf("%X", uint64(id)*0x9E3779B97F4A7C15))
			w.Header().Set("x-amz-id-2", fmt.Sprintf("Zm9v%xYmFy+%d=", id*104729, id*7))
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(code)
			fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>refused</Message></Error>`, map[int]string{403: "AccessDenied", 409: "OperationAborted"}[code])
		})
	}})
	local := filepath.Join(t.TempDir(), "r")
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	var fails publishFailures
	attempt := func(step int) {
		t.Helper()
		dir := filepath.Join(local, runfolder.StepName(step))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "adapter_model.safetensors"), []byte("w"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := runfolder.WritePointer(local, runfolder.LatestName, step); err != nil {
			t.Fatal(err)
		}
		err := publishAttempt(context.Background(), local, srv.URL("bkt", "adapters/r"), "s3://bkt/adapters/r", time.Minute, log)
		if err == nil {
			t.Fatalf("step %d: a store refusing writes took the publish", step)
		}
		fails.record(log, err)
	}
	warnings := func() []string {
		var out []string
		for _, l := range strings.Split(logged.String(), "\n") {
			if strings.Contains(l, "publish failed") {
				out = append(out, l)
			}
		}
		return out
	}
	// Five attempts refused alike, the local latest moving on (the error
	// names the first step unpublished, and its own request ids): warned
	// at the 1st, 2nd and 4th, as publishFailures says of one error.
	for _, step := range []int{7, 12, 13, 14, 15} {
		attempt(step)
	}
	if w := warnings(); len(w) != 3 {
		t.Errorf("5 attempts refused alike (other request ids) gave %d warnings, want 3 (attempts 1, 2, 4):\n%s", len(w), strings.Join(w, "\n"))
	}
	mu.Lock()
	status = http.StatusConflict
	mu.Unlock()
	attempt(16) // the 6th: warned only as another error
	if w := warnings(); len(w) != 4 || !strings.Contains(w[len(w)-1], "StatusCode: 409") {
		t.Errorf("a refusal of another kind after 5 alike gave %d warnings, want 4, the last naming StatusCode: 409:\n%s", len(w), strings.Join(w, "\n"))
	}
}

// TestErrorShapeKeepsStatusCodes: errorShape puts aside step numbers
// and per-request ids, not the store's status code or anything else.
func TestErrorShapeKeepsStatusCodes(t *testing.T) {
	a := fmt.Errorf("publish step 12 of /tmp/out-123/r: write s3://b/adapters/r/step-000012/a: https response error StatusCode: 403, RequestID: 4442587FB7D0A2F9, HostID: aGVsbG8+d29ybGQ=, api error X")
	b := fmt.Errorf("publish step 40 of /tmp/out-123/r: write s3://b/adapters/r/step-000040/a: https response error StatusCode: 403, RequestID: 8C9B7B43D4E1F8A2, HostID: Zm9vYmFy/9=, api error X")
	c := fmt.Errorf("publish step 12 of /tmp/out-123/r: write s3://b/adapters/r/step-000012/a: https response error StatusCode: 503, RequestID: 4442587FB7D0A2F9, HostID: aGVsbG8+d29ybGQ=, api error X")
	d := fmt.Errorf("publish step 12 of /tmp/out-124/r: write s3://b/adapters/r/step-000012/a: https response error StatusCode: 403, RequestID: 4442587FB7D0A2F9, HostID: aGVsbG8+d29ybGQ=, api error X")
	if errorShape(a) != errorShape(b) {
		t.Errorf("other step numbers and request ids differ in shape:\n%s\n%s", errorShape(a), errorShape(b))
	}
	if errorShape(a) == errorShape(c) {
		t.Errorf("StatusCode 403 and 503 have one shape: %s", errorShape(a))
	}
	if errorShape(a) == errorShape(d) {
		t.Errorf("two local folders have one shape: %s", errorShape(a))
	}
}

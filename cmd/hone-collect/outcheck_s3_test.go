package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hone-rl/hone/internal/fakes3d"
)

// TestOutputStoreRefusedBeforeAnyModelCall: -o naming an object whose
// store refuses this writer (credentials that may only read) or that has
// no credentials at all fails at start, before any model call, with the
// store's error: exit 1 for a refused write, exit 2 for no keys (what to
// set is bad input, as a missing bucket is). The pre-flight passed over
// every error but "no such bucket": the whole collection was played
// (minutes to hours of model calls) and failed only at the upload.
func TestOutputStoreRefusedBeforeAnyModelCall(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	var calls atomic.Int64
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "the test's model answers nothing", http.StatusInternalServerError)
	}))
	t.Cleanup(model.Close)
	out := s3.URL("hone", "round/o.parquet")
	args := []string{"--env", "guess", "--groups", "4", "-G", "2", "--model", "m", "--base-url", model.URL + "/v1", "--retries", "0", "-o", out}
	t.Run("read-only keys", func(t *testing.T) {
		calls.Store(0)
		s3.RefuseWrites(true)
		defer s3.RefuseWrites(false)
		r := collectBin(t, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "s3://hone/round/o.parquet") || !strings.Contains(r.stderr, "AccessDenied") {
			t.Errorf("exit %d, stderr %q; want exit 1 naming the output and the store's refusal", r.code, r.stderr)
		}
		if n := calls.Load(); n != 0 {
			t.Errorf("%d model calls before the refused output was noticed; want none", n)
		}
	})
	t.Run("no keys", func(t *testing.T) {
		calls.Store(0)
		t.Setenv("AWS_ACCESS_KEY_ID", "")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "")
		r := collectBin(t, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "AWS_ACCESS_KEY_ID") {
			t.Errorf("exit %d, stderr %q; want exit 2 saying what to set", r.code, r.stderr)
		}
		if n := calls.Load(); n != 0 {
			t.Errorf("%d model calls before the missing keys were noticed; want none", n)
		}
	})
}

package collect_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hone-rl/hone/collect"
	"github.com/hone-rl/hone/format/trajectory"
)

// busyTransport answers every call with a 503, as an overloaded server
// does, and notes when each call came (on synctest's clock). It stands in
// for a server inside the bubble, where a real socket would not let the
// fake clock run.
type busyTransport struct{ at []time.Time }

func (b *busyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	b.at = append(b.at, time.Now())
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusServiceUnavailable, Request: r,
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   io.NopCloser(strings.NewReader(`{"error":{"message":"overloaded"}}`))}, nil
}

// Regression: the model call's backoff doubled without a cap, so with
// --retries 12 the last wait of a 500ms backoff was over 17 minutes, and
// with more retries hours. Each wait is now at most a minute, as the wait
// a Retry-After asks for is.
func TestModelBackoffIsCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bt := &busyTransport{}
		m := collect.NewModel(collect.ModelOptions{BaseURL: "http://busy.invalid/v1", Model: "m", Retries: 16,
			Backoff: 10 * time.Second, HTTPClient: &http.Client{Transport: bt}})
		_, err := m.Complete(context.Background(), []trajectory.Message{{Role: "user", Content: "hi"}}, nil, 1)
		if err == nil || len(bt.at) != 17 {
			t.Fatalf("error %v after %d calls, want a failure after 17", err, len(bt.at))
		}
		for i := 1; i < len(bt.at); i++ {
			if wait := bt.at[i].Sub(bt.at[i-1]); wait > time.Minute {
				t.Fatalf("wait before retry %d is %v, want at most a minute", i, wait)
			}
		}
		// The doubling still reaches the cap: the last waits are near a
		// minute (less at most a quarter of jitter).
		if wait := bt.at[16].Sub(bt.at[15]); wait < 45*time.Second {
			t.Fatalf("last wait %v, want the capped one (45s to 1m)", wait)
		}
	})
}

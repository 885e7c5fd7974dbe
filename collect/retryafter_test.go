package collect_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/hone-rl/hone/collect"
)

// busyFront stands in front of a real server as a rate-limited gateway:
// its first answer is a 429 with Retry-After: 1, and until that second
// has passed every request gets the same answer; later ones go to the
// server.
type busyFront struct {
	upstream string
	mu       sync.Mutex
	until    time.Time
	refused  int
}

func (f *busyFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	if f.until.IsZero() {
		f.until = time.Now().Add(time.Second)
	}
	busy := time.Now().Before(f.until)
	if busy {
		f.refused++
	}
	f.mu.Unlock()
	if busy {
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"message":"rate limited","type":"rate_limit_error","code":"rate_limit_exceeded"}}`)
		return
	}
	resp := passOn(w, r, f.upstream)
	if resp == nil {
		return
	}
	defer resp.Body.Close()
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// passOn sends r on to the server at upstream (its method, path, header
// and body) for a test's front to answer from, and sets the answer's
// Content-Type on w; the caller closes the body. When the server cannot
// be asked it answers 502 itself and returns nil.
func passOn(w http.ResponseWriter, r *http.Request, upstream string) *http.Response {
	req, err := http.NewRequestWithContext(r.Context(), r.Method, upstream+r.URL.Path, r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return nil
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return nil
	}
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	return resp
}

// A 429 (or 503) that says when to come back with Retry-After is asked
// again no sooner than that, even when the backoff would be shorter: an
// API's rate limit lifts when it says, and retries spent before then
// failed the episode with the retries left unused.
func TestRetryHonoursRetryAfter(t *testing.T) {
	front := &busyFront{upstream: startTinyServe(t)}
	srv := httptest.NewServer(front)
	defer srv.Close()
	var out bytes.Buffer
	temp := 1.0
	o := collect.Options{
		Env: "guess", Groups: 1, GroupSize: 1, Concurrency: 1, MaxTurns: 1, Seed: 3, Run: "r", Policy: "model", Out: &out,
		Model: collect.ModelOptions{BaseURL: srv.URL + "/v1", Model: "tiny", Temperature: &temp, MaxTokens: 4, Retries: 2, Backoff: time.Millisecond},
	}
	if _, err := runStats(context.Background(), o); err != nil {
		t.Fatalf("run: %v", err)
	}
	tr := readGroups(t, out.Bytes())[0].Trajectories[0]
	front.mu.Lock()
	refused := front.refused
	front.mu.Unlock()
	if tr.Error != "" || refused != 1 {
		t.Fatalf("episode error %q after %d refused calls, want one refused call, then an answer", tr.Error, refused)
	}
}

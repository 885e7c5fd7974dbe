package serve

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/waitfor"
)

// TestPromptScoringQueueBounded: completions with echo and logprobs score
// their prompt one forward at a time. The requests waiting for that turn
// are bounded as the engine's queue is (--max-queue, a 429 with code
// queue_full beyond it), and one whose client goes away leaves the queue
// at once, rather than waiting for its turn.
func TestPromptScoringQueueBounded(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t), MaxQueue: 1}, nil)
	s := ts.s
	s.scoreSlot <- struct{}{} // a scoring forward in progress
	body := `{"model":"tiny","prompt":"hello there","max_tokens":1,"echo":true,"logprobs":1}`
	post := func(ctx context.Context) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, "POST", ts.url+"/v1/completions", strings.NewReader(body))
		if err != nil {
			return 0, "", err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := make(chan error, 1)
	go func() {
		_, _, err := post(ctx)
		first <- err
	}()
	waitfor.Until(t, 10*time.Second, "the first request waiting to score its prompt", func() bool { return s.scoreWaiting.Load() == 1 })

	status, resp, err := post(context.Background())
	if err != nil {
		t.Fatalf("second request: %v (it should be refused at once, not wait)", err)
	}
	if status != http.StatusTooManyRequests || !strings.Contains(resp, "queue_full") {
		t.Errorf("second request with the scoring queue full: %d %s, want 429 queue_full", status, resp)
	}

	cancel()
	if err := <-first; err == nil {
		t.Errorf("the cancelled request got an answer")
	}
	waitfor.Until(t, 10*time.Second, "the cancelled request to leave the scoring queue", func() bool { return s.scoreWaiting.Load() == 0 })

	<-s.scoreSlot // the forward in progress ends
	if status, resp, err := post(context.Background()); err != nil || status != http.StatusOK {
		t.Errorf("after the queue emptied: %d %s %v, want 200", status, resp, err)
	}
}

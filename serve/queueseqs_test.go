package serve

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/hone-rl/hone/internal/waitfor"
)

// fillQueue starts a request of n=running choices that generates for long
// (filling a batch of that size), then one of n=queued that waits for
// it; both are cancelled at the test's end.
func fillQueue(t *testing.T, ts *testServer, running, queued int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	for i, n := range []int{running, queued} {
		p := openai.CompletionNewParams{Model: "tiny", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("x")},
			MaxTokens: openai.Int(4000), N: openai.Int(int64(n))}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ts.client.Completions.New(ctx, p, option.WithJSONSet("ignore_eos", true))
		}()
		waitfor.Until(t, 10*time.Second, "the first request running, then the second queued", func() bool {
			st := ts.s.eng.Stats()
			return (i == 0 && st.Running == running) || (i == 1 && st.Queued == 1)
		})
	}
}

// TestQueueBoundCountsSequences: --max-queue bounds the sequences waiting
// for the batch, each request counting its n: a request with n=64 is 64
// sequences of work ahead of the next one, where it counted as one and
// let a queue of requests hold max-queue times the batch. The 429 says
// how many wait and what the bound is.
func TestQueueBoundCountsSequences(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t), MaxBatch: 4, MaxQueue: 4, MaxTokens: 4000}, nil)
	fillQueue(t, ts, 4, 3)
	status, header, body := ts.postHeader(t, "/v1/completions", `{"model":"tiny","prompt":"x","max_tokens":2,"n":2}`)
	if status != http.StatusTooManyRequests || !strings.Contains(body, "queue_full") || header.Get("Retry-After") != "1" {
		t.Fatalf("n=2 with 3 of 4 sequences waiting: %d %s (Retry-After %q), want 429 queue_full", status, body, header.Get("Retry-After"))
	}
	for _, want := range []string{"3 sequences", "n=2", "--max-queue", " 4"} {
		if !strings.Contains(body, want) {
			t.Errorf("the 429 %s does not say %q", body, want)
		}
	}
	// /metrics shows what the bound counts.
	if _, m := ts.get(t, "/metrics"); !strings.Contains(m, "\nhone_serve_sequences_waiting 3\n") {
		t.Errorf("/metrics lacks hone_serve_sequences_waiting 3:\n%s", m)
	}
	// One more sequence fits.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := ts.client.Completions.New(ctx, openai.CompletionNewParams{Model: "tiny",
			Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("x")}, MaxTokens: openai.Int(2)})
		done <- err
	}()
	waitfor.Until(t, 10*time.Second, "n=1 to join the queue beside n=3", func() bool { return ts.s.eng.Stats().Queued == 2 })
	cancel()
	<-done
}

// TestEchoLogprobsRefusedBeforeScoring: with the queue full, a completion
// with echo and logprobs is refused (429) before its prompt is scored, not
// after a forward over the whole prompt whose result is thrown away; it
// waited for the scoring slot first.
func TestEchoLogprobsRefusedBeforeScoring(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t), MaxBatch: 1, MaxQueue: 1, MaxTokens: 4000}, nil)
	fillQueue(t, ts, 1, 1)
	s := ts.s
	s.scoreSlot <- struct{}{} // a scoring forward in progress: scoring waits
	released := sync.OnceFunc(func() { <-s.scoreSlot })
	t.Cleanup(released)
	type reply struct {
		status int
		body   string
	}
	got := make(chan reply, 1)
	go func() {
		req, _ := http.NewRequest("POST", ts.url+"/v1/completions", strings.NewReader(`{"model":"tiny","prompt":"hello","max_tokens":1,"echo":true,"logprobs":1}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- reply{0, err.Error()}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		got <- reply{resp.StatusCode, string(b)}
	}()
	waitfor.Until(t, 10*time.Second, "an answer, or the request waiting to score its prompt", func() bool {
		return len(got) > 0 || s.scoreWaiting.Load() > 0
	})
	if s.scoreWaiting.Load() > 0 {
		released()
		r := <-got
		t.Fatalf("with the queue full, the request went on to score its prompt (then answered %d %s); want a 429 before", r.status, r.body)
	}
	if r := <-got; r.status != http.StatusTooManyRequests || !strings.Contains(r.body, "queue_full") {
		t.Fatalf("echo with logprobs, the queue full: %d %s, want 429 queue_full", r.status, r.body)
	}
}

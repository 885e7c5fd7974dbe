package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/waitfor"
	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
)

// TestCancelStormKVCache: many concurrent requests over HTTP, most sharing
// a long prompt beginning (so they wait for one another's prefill, copy
// running rows or start from kept rows), n of 1 to 3, streamed or not,
// given up by their clients at random points (before the answer, after a
// random number of chunks) while others finish, leave the KV cache as a
// fresh server's: no bytes reserved once they are gone, later requests
// answer as on a fresh server, and once the server shuts down the backend
// holds nothing. kerneltest.Resident panics on a row freed twice and
// counts rows never freed; the reservation gauge shows a sequence the
// engine lost track of.
func TestCancelStormKVCache(t *testing.T) {
	be := kerneltest.Resident(ref.New())
	ts := startServer(t, Options{Model: tinyDir(t), Backend: be, MaxBatch: 8, PrefillTokens: 24}, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	type job struct {
		body   string
		chunks int
	}
	var jobs []job
	for range 120 {
		stream := rng.IntN(3) > 0
		chunks := rng.IntN(6) // 0: at once; else after that many chunks
		switch {
		case rng.IntN(4) == 0:
			stream, chunks = false, -1 // runs to its end, then its next turn (turn)
		case !stream:
			chunks = 0
		}
		jobs = append(jobs, job{stormBody(rng, stream, chunks < 0), chunks})
	}
	errs := make(chan error, len(jobs))
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs <- stormJob(ts.url, j.body, j.chunks, rng2(j.body))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if metricValue(t, ts, "hone_serve_requests_cancelled_total") == "0" {
		t.Fatal("no request was given up in the engine: the storm tested nothing")
	}
	if metricValue(t, ts, "hone_serve_prefix_cache_hits_total") == "0" {
		t.Fatal("no prompt started from another's rows: the storm never shared a prefix")
	}
	waitfor.Until(t, 30*time.Second, "the engine to drop every given-up request", func() bool {
		return metricValue(t, ts, "hone_serve_sequences_running") == "0" && metricValue(t, ts, "hone_serve_requests_waiting") == "0"
	})
	if v := metricValue(t, ts, "hone_serve_kv_cache_used_bytes"); v != "0" {
		t.Errorf("KV cache bytes reserved with no request in flight: %s, want 0", v)
	}
	fresh := startServer(t, Options{Model: tinyDir(t), MaxBatch: 8, PrefillTokens: 24}, nil)
	for _, body := range stormProbes {
		if got, want := stormAnswer(t, ts, body), stormAnswer(t, fresh, body); got != want {
			t.Errorf("%s: after the storm %q, a fresh server %q", body, got, want)
		}
	}
	ts.close(t)
	if n := be.Live(); n != 0 {
		t.Errorf("%d allocations (%d bytes) live after shutdown, want 0: KV rows leaked", n, be.LiveBytes())
	}
}

// stormProbes are requests on the storm's prompts (greedy, and seeded with
// n = 2) whose answers do not depend on what ran before.
var stormProbes = []string{
	`{"model":"tiny","prompt":"The quick brown fox jumps over the lazy dog again and then sleeps.","max_tokens":8,"temperature":0,"ignore_eos":true}`,
	`{"model":"tiny","prompt":"The quick brown fox jumps over the lazy dog again and runs away fast","max_tokens":8,"n":2,"temperature":1,"seed":5,"ignore_eos":true}`,
	`{"model":"tiny","prompt":"The quick brown fox jumps over the lazy dog again and the bird","max_tokens":8,"temperature":0,"ignore_eos":true}`,
}

// stormAnswer is the choices' texts of body's answer, in order.
func stormAnswer(t *testing.T, ts *testServer, body string) string {
	t.Helper()
	var resp struct {
		Choices []struct {
			Index int
			Text  string
		}
	}
	ts.postHonoured(t, "/v1/completions", body, &resp)
	texts := make([]string, len(resp.Choices))
	for _, c := range resp.Choices {
		texts[c.Index] = c.Text
	}
	return strings.Join(texts, "|")
}

// stormBody is a completions request on one of a few prompts sharing
// their first 40 bytes (the tiny model's tokens are bytes).
func stormBody(rng *rand.Rand, stream, one bool) string {
	n := 1 + rng.IntN(3)
	if one {
		n = 1
	}
	const shared = "The quick brown fox jumps over the lazy dog again and "
	tails := []string{"again.", "then sleeps.", "runs away fast", "x", "and the cat watches it all"}
	return fmt.Sprintf(`{"model":"tiny","prompt":%q,"max_tokens":%d,"n":%d,"stream":%t,"temperature":1,"seed":%d,"ignore_eos":true,"return_token_ids":true}`,
		shared+tails[rng.IntN(len(tails))], 4+rng.IntN(12), n, stream, rng.IntN(1000))
}

// rng2 is a generator for one job's next turn, seeded by its body (the
// jobs run concurrently, so they cannot share the storm's).
func rng2(body string) *rand.Rand {
	var h uint64
	for _, c := range body {
		h = h*31 + uint64(c)
	}
	return rand.New(rand.NewPCG(h, 3))
}

// stormJob runs stormOne and, for a request read to its end, its next
// turn (the prompt, the answer and more: a prompt that takes its kept
// rows over), streamed and given up after a random number of chunks.
func stormJob(url, body string, chunks int, rng *rand.Rand) error {
	ids, err := stormOne(url, body, chunks)
	if err != nil || chunks >= 0 {
		return err
	}
	// As ids, not text: the tiny model's bytes need not be UTF-8, and a
	// text would not encode back to the rows' tokens.
	prompt, _ := json.Marshal(append(ids, 32, 97, 110, 100))
	next := fmt.Sprintf(`{"model":"tiny","prompt":%s,"max_tokens":8,"stream":true,"temperature":1,"seed":%d,"ignore_eos":true}`,
		prompt, rng.IntN(1000))
	_, err = stormOne(url, next, rng.IntN(6))
	return err
}

// stormOne sends body and gives it up after chunks streamed chunks
// (chunks < 0: reads the whole answer; 0: right after the headers or,
// not streamed, while the request is on its way).
func stormOne(url, body string, chunks int) ([]int32, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/v1/completions", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if chunks == 0 && !strings.Contains(body, `"stream":true`) {
		go cancel() // races the request: given up anywhere from the send to the answer
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil // given up before the answer came
	}
	defer resp.Body.Close()
	if chunks < 0 {
		var out struct {
			Choices []struct {
				PromptTokenIDs []int32 `json:"prompt_token_ids"`
				TokenIDs       []int32 `json:"token_ids"`
			}
		}
		err := json.NewDecoder(resp.Body).Decode(&out)
		if err != nil || resp.StatusCode != http.StatusOK || len(out.Choices) != 1 || len(out.Choices[0].PromptTokenIDs) == 0 {
			return nil, fmt.Errorf("%s: status %d, %d choices, %v", body, resp.StatusCode, len(out.Choices), err)
		}
		return append(out.Choices[0].PromptTokenIDs, out.Choices[0].TokenIDs...), nil
	}
	sc := bufio.NewScanner(resp.Body)
	for n := 0; n < chunks; {
		if !sc.Scan() {
			break
		}
		if strings.HasPrefix(sc.Text(), "data: ") {
			n++
		}
	}
	return nil, nil
}

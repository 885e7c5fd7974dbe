package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/waitfor"
)

// TestAllowedTokenIDs: vLLM's allowed_token_ids keeps every other token
// out of the choice. It was ignored (only a warning header): at
// temperature 1 the tiny model's bytes came from all over its vocabulary.
// An id outside the vocabulary, and an empty list, are a 400 naming it, as
// vLLM refuses them; chat takes it too.
func TestAllowedTokenIDs(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	body := func(extra string) string {
		return `{"model":"tiny","prompt":"hi","max_tokens":12,"n":4,"ignore_eos":true,"temperature":1,"seed":5,"return_token_ids":true` + extra + `}`
	}
	allowed := []int32{104, 105, 258}
	outside := func(ids [][]int32) int {
		n := 0
		for _, c := range ids {
			for _, id := range c {
				if !slices.Contains(allowed, id) {
					n++
				}
			}
		}
		return n
	}
	plain, _ := completionIDs(t, ts, body(""))
	if outside(plain) == 0 {
		t.Fatalf("without allowed_token_ids every token was among %v: the test cannot tell its effect", allowed)
	}
	got, warning := completionIDs(t, ts, body(`,"allowed_token_ids":[104,105,258]`))
	if n := outside(got); n != 0 || warning != "" {
		t.Errorf("allowed_token_ids %v: %d tokens outside it (%v), %s %q; want none and no warning", allowed, n, got, WarningHeader, warning)
	}
	status, h, out := ts.postHeader(t, "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":12,"temperature":1,"seed":5,"ignore_eos":true,"return_token_ids":true,"allowed_token_ids":[104,105]}`)
	if status != http.StatusOK || h.Get(WarningHeader) != "" || strings.Trim(chatText(t, out), "hi") != "" {
		t.Errorf("chat with allowed_token_ids [104,105] (h, i): %d, %s %q: %s; want only h and i", status, WarningHeader, h.Get(WarningHeader), out)
	}
	for _, v := range []string{"[259]", "[-1]", "[]", "[1,null]"} {
		status, out := ts.post(t, "/v1/completions", body(`,"allowed_token_ids":`+v))
		if status != http.StatusBadRequest || !strings.Contains(out, `"param":"allowed_token_ids`) {
			t.Errorf("allowed_token_ids %s: %d %s, want 400 naming allowed_token_ids", v, status, out)
		}
	}
}

// TestBadWords: vLLM's bad_words bans, for each word's tokens (and those
// of the word after a space, when that differs in its first token only),
// the last token wherever the output so far ends with the ones before it.
// It was ignored (only a warning header). With a logit bias that makes
// the tiny model write "aaaa…", bad_words ["aa"] still lets "a" begin (no
// "a" before it) but never follows an "a" with another; ["a"] bans it
// outright.
func TestBadWords(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	if ids := ts.s.tok.Encode("aa", false); !slices.Equal(ids, []int{'a', 'a'}) {
		t.Fatalf("the tiny tokenizer encodes \"aa\" as %v, want one token a byte", ids)
	}
	body := func(extra string) string {
		return `{"model":"tiny","prompt":"hi","max_tokens":8,"ignore_eos":true,"temperature":0,"return_token_ids":true,"logit_bias":{"97":100}` + extra + `}`
	}
	plain, _ := completionIDs(t, ts, body(""))
	if want := slices.Repeat([]int32{'a'}, 8); !slices.Equal(plain[0], want) {
		t.Fatalf("without bad_words: %v, want %v", plain[0], want)
	}
	got, warning := completionIDs(t, ts, body(`,"bad_words":["aa"]`))
	ids := got[0]
	if warning != "" || len(ids) != 8 || ids[0] != 'a' {
		t.Fatalf("bad_words [\"aa\"]: %v, %s %q; want 8 tokens beginning with a, no warning", ids, WarningHeader, warning)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] == 'a' && ids[i-1] == 'a' {
			t.Errorf("bad_words [\"aa\"]: %v has a after a at %d", ids, i)
		}
		if ids[i] != 'a' && ids[i-1] != 'a' {
			t.Errorf("bad_words [\"aa\"]: %v does not take a after %d at %d, which only the word's prefix bans", ids, ids[i-1], i)
		}
	}
	one, _ := completionIDs(t, ts, body(`,"bad_words":["a"]`))
	if slices.Contains(one[0], 'a') {
		t.Errorf("bad_words [\"a\"]: %v holds a", one[0])
	}
	status, h, out := ts.postHeader(t, "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":8,"temperature":0,"ignore_eos":true,"logit_bias":{"97":100},"bad_words":["a"]}`)
	if status != http.StatusOK || h.Get(WarningHeader) != "" || strings.Contains(chatText(t, out), "a") {
		t.Errorf("chat with bad_words [\"a\"]: %d, %s %q: %s; want no a", status, WarningHeader, h.Get(WarningHeader), out)
	}
	for _, v := range []string{`[""]`, `["  "]`} {
		status, out := ts.post(t, "/v1/completions", body(`,"bad_words":`+v))
		if status != http.StatusBadRequest || !strings.Contains(out, `"param":"bad_words`) {
			t.Errorf("bad_words %s: %d %s, want 400 naming bad_words", v, status, out)
		}
	}
}

// chatText is the first choice's message content of a chat answer.
func chatText(t *testing.T, body string) string {
	t.Helper()
	var resp struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || len(resp.Choices) == 0 {
		t.Fatalf("chat answer %s: %v", body, err)
	}
	return resp.Choices[0].Message.Content
}

// TestTokenFilterCheckedBeforeScoring: allowed_token_ids and bad_words
// are read before the prompt is scored (prompt_logprobs, or echo with
// logprobs), as every other field is. They were read after: a request
// with a bad list cost a full scoring forward before its 400, and with
// the queue full it was a 429, which tells the client to send again the
// request that can never pass.
func TestTokenFilterCheckedBeforeScoring(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t), MaxBatch: 1, MaxQueue: 1, MaxTokens: 4000}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.url+"/v1/completions",
				strings.NewReader(`{"model":"tiny","prompt":"x","max_tokens":4000,"ignore_eos":true}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer none")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		waitfor.Until(t, 10*time.Second, "the first request running, then the second queued", func() bool {
			st := ts.s.eng.Stats()
			return (i == 0 && st.Running == 1) || (i == 1 && st.Queued == 1)
		})
	}
	for _, c := range []struct{ path, body, param string }{
		{"/v1/completions", `{"model":"tiny","prompt":"hi","max_tokens":1,"prompt_logprobs":1,"allowed_token_ids":[259]}`, "allowed_token_ids[0]"},
		{"/v1/completions", `{"model":"tiny","prompt":"hi","max_tokens":1,"echo":true,"logprobs":1,"bad_words":[" "]}`, "bad_words[0]"},
		{"/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":1,"prompt_logprobs":0,"allowed_token_ids":[]}`, "allowed_token_ids"},
	} {
		status, out := ts.post(t, c.path, c.body)
		if status != http.StatusBadRequest || !strings.Contains(out, `"param":"`+c.param+`"`) {
			t.Errorf("%s with the queue full: %d %s; want 400 naming %s", c.body, status, out, c.param)
		}
	}
}

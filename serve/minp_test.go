package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// completionIDs posts a completion body (which asks for return_token_ids)
// and returns each choice's token ids and the X-Hone-Warning header; a
// status other than 200 fails the test.
func completionIDs(t *testing.T, ts *testServer, body string) ([][]int32, string) {
	t.Helper()
	status, h, out := ts.postHeader(t, "/v1/completions", body)
	if status != http.StatusOK {
		t.Fatalf("%s: status %d: %s", body, status, out)
	}
	var resp struct {
		Choices []struct {
			TokenIDs []int32 `json:"token_ids"`
		}
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatal(err)
	}
	var ids [][]int32
	for _, c := range resp.Choices {
		ids = append(ids, c.TokenIDs)
	}
	return ids, h.Get(WarningHeader)
}

// TestMinP: vLLM's min_p keeps, after temperature, only the tokens whose
// probability is at least min_p times the most likely one's. It was
// answered as if not sent (only X-Hone-Warning named it): at temperature
// 10, a token favoured by a logit bias of 20 (e² ≈ 7 times any other token)
// came out a few times in 32, where min_p 0.5 leaves it alone in the
// running (the others are some e^(20/10) below it, past 1/0.5). Outside
// [0, 1] it is a 400 naming it.
func TestMinP(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	const favoured = 120
	body := func(extra string) string {
		return fmt.Sprintf(`{"model":"tiny","prompt":"hi","max_tokens":8,"n":4,"ignore_eos":true,"temperature":10,"seed":11,"return_token_ids":true,"logit_bias":{"%d":20}%s}`, favoured, extra)
	}
	count := func(ids [][]int32) int {
		n := 0
		for _, c := range ids {
			for _, id := range c {
				if id == favoured {
					n++
				}
			}
		}
		return n
	}
	plain, _ := completionIDs(t, ts, body(""))
	if n := count(plain); n > 16 {
		t.Fatalf("without min_p the favoured token came %d times in 32: the test cannot tell min_p's effect", n)
	}
	withP, warning := completionIDs(t, ts, body(`,"min_p":0.5`))
	if n := count(withP); n != 32 || warning != "" {
		t.Errorf("min_p 0.5: the favoured token %d came %d times in 32 (%v), %s %q; want every time and no warning", favoured, n, withP, WarningHeader, warning)
	}
	// min_p 0 is off, and greedy ignores it.
	if off, _ := completionIDs(t, ts, body(`,"min_p":0`)); !slices.EqualFunc(off, plain, slices.Equal) {
		t.Errorf("min_p 0 changed the answer: %v, want %v", off, plain)
	}
	g1, _ := completionIDs(t, ts, `{"model":"tiny","prompt":"hi","max_tokens":8,"ignore_eos":true,"temperature":0,"return_token_ids":true}`)
	g2, _ := completionIDs(t, ts, `{"model":"tiny","prompt":"hi","max_tokens":8,"ignore_eos":true,"temperature":0,"return_token_ids":true,"min_p":1}`)
	if !slices.EqualFunc(g1, g2, slices.Equal) {
		t.Errorf("greedy with min_p 1: %v, want %v", g2, g1)
	}
	for _, v := range []string{"-0.1", "1.5"} {
		status, out := ts.post(t, "/v1/completions", `{"model":"tiny","prompt":"hi","max_tokens":2,"min_p":`+v+`}`)
		if status != http.StatusBadRequest || !strings.Contains(out, `"param":"min_p"`) {
			t.Errorf("min_p %s: %d %s, want 400 naming min_p", v, status, out)
		}
	}
}

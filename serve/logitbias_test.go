package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"

	"github.com/openai/openai-go/v3"
)

// TestLogitBias: logit_bias moves the choice as OpenAI's and vLLM's do —
// −100 keeps a token out (the greedy answer's first token never comes
// out), +100 makes one come out every time even at temperature 1 — while
// the logprobs reported stay the raw model's, as with the penalties; the
// official client's LogitBias reaches the sampler; a key that is not a
// token id of the vocabulary, or a bias outside [−100, 100], is a 400
// naming logit_bias.
func TestLogitBias(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	type answer struct {
		ids []int32
		lps []float64
	}
	ask := func(extra string) answer {
		t.Helper()
		var a answer
		a.ids, a.lps = chatTokens(t, ts, `{"model":"tiny","messages":[{"role":"user","content":"hi"}],
			"max_tokens":6,"ignore_eos":true,"logprobs":true,"return_token_ids":true`+extra+`}`)
		if len(a.ids) != 6 || len(a.lps) != 6 {
			t.Fatalf("%s: %d tokens, %d logprobs; want 6", extra, len(a.ids), len(a.lps))
		}
		return a
	}
	greedy := ask(`,"temperature":0`)
	banned := greedy.ids[0]
	noFirst := ask(fmt.Sprintf(`,"temperature":0,"logit_bias":{"%d":-100}`, banned))
	if slices.Contains(noFirst.ids, banned) {
		t.Errorf("token %d banned by logit_bias −100 came out: %v", banned, noFirst.ids)
	}
	if slices.Equal(noFirst.ids, greedy.ids) {
		t.Errorf("logit_bias changed nothing: %v", noFirst.ids)
	}

	// A token the greedy answer does not start with, forced at temperature 1.
	forced := int32(0)
	for forced == banned || forced == greedy.ids[1] {
		forced++
	}
	all := ask(fmt.Sprintf(`,"temperature":1,"seed":3,"logit_bias":{"%d":100}`, forced))
	for i, id := range all.ids {
		if id != forced {
			t.Errorf("token %d is %d; logit_bias +100 forces %d: %v", i, id, forced, all.ids)
		}
	}
	// The first token's logprob is the raw model's, not the biased one's
	// (which would be about 0): the logprob of choosing it from the
	// greedy answer's first row, as a plain request scores that row.
	scored := ask(fmt.Sprintf(`,"temperature":0,"logit_bias":{"%d":100},"top_logprobs":20`, forced))
	if all.lps[0] > -1e-3 || scored.lps[0] != all.lps[0] {
		t.Errorf("forced token's logprob %v (greedy-with-bias %v): want the raw model's, below 0", all.lps[0], scored.lps[0])
	}

	// The official client's field.
	c, err := ts.client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:       "tiny",
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		MaxTokens:   openai.Int(6),
		Temperature: openai.Float(0),
		LogitBias:   map[string]int64{strconv.Itoa(int(banned)): -100},
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.Choices[0].Message.Content == "" {
		t.Errorf("client request: empty answer")
	}

	vocab := ts.s.m.Config.Vocab
	for _, bias := range []string{`{"abc":1}`, `{"-1":1}`, fmt.Sprintf(`{"%d":1}`, vocab), `{"1":101}`, `{"1":-100.5}`} {
		status, body := ts.post(t, "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"logit_bias":`+bias+`}`)
		var eb struct {
			Error struct {
				Param *string `json:"param"`
			} `json:"error"`
		}
		json.Unmarshal([]byte(body), &eb)
		if status != http.StatusBadRequest || eb.Error.Param == nil || *eb.Error.Param != "logit_bias" {
			t.Errorf("logit_bias %s: %d %s, want 400 naming logit_bias", bias, status, body)
		}
	}
	for _, bias := range []string{`{}`, `null`} {
		if status, body := ts.post(t, "/v1/completions", `{"model":"tiny","prompt":"hi","max_tokens":2,"logit_bias":`+bias+`}`); status != http.StatusOK {
			t.Errorf("logit_bias %s: %d %s, want 200", bias, status, body)
		}
	}
}

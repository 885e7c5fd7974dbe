package proxy_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/hone-rl/hone/collect/proxy"
)

// TestProxyTokenIDsFromLogprobTokens: an upstream that does not return
// token_ids (--no-token-ids, or a vLLM without return_token_ids) still
// names the sampled ids when the agent asks for
// return_tokens_as_token_ids, as OpenPipe ART's agents do: each logprobs
// token is "token_id:<id>". The proxy records those ids with the turn,
// whole and streamed, where it recorded the turn without any, leaving
// training to tokenize the text again and its logprobs unplaced. The real
// hone-serve answers, through the official Go client.
func TestProxyTokenIDsFromLogprobTokens(t *testing.T) {
	base, tp := startServe(t)
	out := t.TempDir()
	p, err := proxy.New(proxy.Options{Upstream: base, OutDir: out, Run: "px", HTTPClient: tp.client(), NoTokenIDs: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	ctx := context.Background()
	read := map[string][]int32{} // trajectory → the ids the agent read
	for _, tid := range []string{"whole", "streamed"} {
		client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("none"), option.WithMaxRetries(0),
			option.WithHeader("X-Hone-Trajectory", tid), option.WithHeader("X-Hone-Group", tid))
		params := openai.ChatCompletionNewParams{
			Model:     "tiny",
			Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello there")},
			MaxTokens: openai.Int(12),
			Seed:      openai.Int(5),
			Logprobs:  openai.Bool(true),
		}
		asIDs := option.WithJSONSet("return_tokens_as_token_ids", true)
		var lps []openai.ChatCompletionTokenLogprob
		if tid == "streamed" {
			st := client.Chat.Completions.NewStreaming(ctx, params, asIDs)
			for st.Next() {
				for _, c := range st.Current().Choices {
					lps = append(lps, c.Logprobs.Content...)
				}
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
		} else {
			resp, err := client.Chat.Completions.New(ctx, params, asIDs)
			if err != nil {
				t.Fatal(err)
			}
			lps = resp.Choices[0].Logprobs.Content
		}
		for _, lp := range lps {
			s, ok := strings.CutPrefix(lp.Token, "token_id:")
			id, err := strconv.ParseInt(s, 10, 32)
			if !ok || err != nil {
				t.Fatalf("%s: the agent read logprobs token %q, want token_id:<id>", tid, lp.Token)
			}
			read[tid] = append(read[tid], int32(id))
		}
		if len(read[tid]) == 0 {
			t.Fatalf("%s: no logprobs", tid)
		}
	}
	for tid := range read {
		resp, err := http.Post(srv.URL+"/hone/trajectories/"+tid+"/reward", "application/json", strings.NewReader(`{"reward":1}`))
		if err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("reward %s: %v %v", tid, err, resp)
		}
	}
	trs := readGroups(t, srv.URL, out, "whole", "streamed")
	for tid, ids := range read {
		tr := trs[tid]
		last := tr.Messages[len(tr.Messages)-1]
		if !slices.Equal(last.TokenIDs, ids) || len(last.Logprobs) != len(ids) || tr.Error != "" {
			t.Errorf("%s: recorded token ids %v (%d logprobs, error %q); the agent read %v", tid, last.TokenIDs, len(last.Logprobs), tr.Error, ids)
		}
	}
}

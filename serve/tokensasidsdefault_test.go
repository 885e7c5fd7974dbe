package serve

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestTokensAsIDsServerDefault: Options.ReturnTokensAsTokenIDs (vLLM's
// --return-tokens-as-token-ids, which ART starts its server with) names
// every logprobs token "token_id:<id>" for requests that do not say, chat
// and completions, whole and streamed, while a request's own false still
// gets the tokens' text. Only the request field existed, so agent code
// written for that vLLM server, which never sends it, read text tokens
// where it parses ids.
func TestTokensAsIDsServerDefault(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t), ReturnTokensAsTokenIDs: true}, nil)
	ctx := context.Background()
	isID := func(s string) bool { return strings.HasPrefix(s, "token_id:") }
	p := chatParams("tiny", 3, 6)
	p.Logprobs = openai.Bool(true)
	p.TopLogprobs = openai.Int(2)
	resp, err := ts.client.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	toks := resp.Choices[0].Logprobs.Content
	if len(toks) == 0 {
		t.Fatal("no logprobs")
	}
	for _, lp := range toks {
		if !isID(lp.Token) || len(lp.TopLogprobs) == 0 || !isID(lp.TopLogprobs[0].Token) {
			t.Errorf("chat: token %q (top %+v), want token_id:<id>", lp.Token, lp.TopLogprobs)
		}
	}
	st := ts.client.Chat.Completions.NewStreaming(ctx, p)
	for st.Next() {
		for _, c := range st.Current().Choices {
			for _, lp := range c.Logprobs.Content {
				if !isID(lp.Token) {
					t.Errorf("chat stream: token %q, want token_id:<id>", lp.Token)
				}
			}
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	off, err := ts.client.Chat.Completions.New(ctx, p, option.WithJSONSet("return_tokens_as_token_ids", false))
	if err != nil {
		t.Fatal(err)
	}
	for _, lp := range off.Choices[0].Logprobs.Content {
		if isID(lp.Token) {
			t.Errorf("chat with return_tokens_as_token_ids false: token %q, want its text", lp.Token)
		}
	}
	c, err := ts.client.Completions.New(ctx, openai.CompletionNewParams{Model: "tiny", MaxTokens: openai.Int(4), Seed: openai.Int(3),
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("hello")}, Logprobs: openai.Int(1)})
	if err != nil {
		t.Fatal(err)
	}
	if lp := c.Choices[0].Logprobs; len(lp.Tokens) == 0 || !isID(lp.Tokens[0]) {
		t.Errorf("completions: tokens %q, want token_id:<id>", lp.Tokens)
	}
}

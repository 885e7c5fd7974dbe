package serve

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestContinuousUsageStats: with vLLM's stream_options
// continuous_usage_stats (and include_usage) every chunk of a chat or
// completions stream carries the usage so far: the prompt's tokens and the
// completion tokens sent up to and with that chunk, the last usage chunk
// the whole request's. The field was dropped without a word (it sits
// inside stream_options, where the ignored-fields warning does not look),
// so a client metering its stream as it goes read no usage until the end.
func TestContinuousUsageStats(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	ctx := context.Background()
	cont := option.WithJSONSet("stream_options.continuous_usage_stats", true)
	type seen struct {
		has                bool
		prompt, completion int64
		tokens             int // tokens this chunk carries
	}
	check := func(what string, chunks []seen) {
		t.Helper()
		if len(chunks) < 3 {
			t.Fatalf("%s: %d chunks", what, len(chunks))
		}
		final := chunks[len(chunks)-1]
		sent := 0
		for i, c := range chunks {
			sent += c.tokens
			if !c.has || c.prompt != final.prompt || c.completion != int64(sent) {
				t.Errorf("%s: chunk %d: usage %v prompt %d completion %d; want prompt %d completion %d (tokens sent so far)",
					what, i, c.has, c.prompt, c.completion, final.prompt, sent)
			}
		}
		if final.prompt == 0 || final.completion != 6 {
			t.Errorf("%s: final usage prompt %d completion %d; want 6 completion tokens", what, final.prompt, final.completion)
		}
	}

	p := chatParams("tiny", 3, 6)
	p.Logprobs = openai.Bool(true) // one logprobs entry per token: counts what each chunk carries
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	st := ts.client.Chat.Completions.NewStreaming(ctx, p, cont, option.WithJSONSet("ignore_eos", true))
	var chat []seen
	for st.Next() {
		c := st.Current()
		n := 0
		for _, ch := range c.Choices {
			n += len(ch.Logprobs.Content)
		}
		chat = append(chat, seen{c.JSON.Usage.Valid(), c.Usage.PromptTokens, c.Usage.CompletionTokens, n})
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	check("chat", chat)

	cs := ts.client.Completions.NewStreaming(ctx, openai.CompletionNewParams{
		Model:         "tiny",
		Prompt:        openai.CompletionNewParamsPromptUnion{OfString: openai.String("hello")},
		MaxTokens:     openai.Int(6),
		Seed:          openai.Int(3),
		Logprobs:      openai.Int(0),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}, cont, option.WithJSONSet("ignore_eos", true))
	var cmpl []seen
	for cs.Next() {
		c := cs.Current()
		n := 0
		for _, ch := range c.Choices {
			n += len(ch.Logprobs.Tokens)
		}
		cmpl = append(cmpl, seen{c.JSON.Usage.Valid(), c.Usage.PromptTokens, c.Usage.CompletionTokens, n})
	}
	if err := cs.Err(); err != nil {
		t.Fatal(err)
	}
	check("completions", cmpl)
}

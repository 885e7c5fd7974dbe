package serve

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestContinuousUsageCachedTokens: with prefix caching, a stream's
// continuous usage never states a cached_tokens other than the request's
// (the last usage chunk's). The role chunk is sent before the request
// has started, when the prefix cache has not been looked up, and said
// cached_tokens 0 where the last chunk said 16: a client metering cached
// tokens as the stream goes read a count that later changed.
func TestContinuousUsageCachedTokens(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	ctx := context.Background()
	p := chatParams("tiny", 3, 4)
	a, err := ts.client.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	p.Messages = append(p.Messages, a.Choices[0].Message.ToParam(), openai.UserMessage("and then?"))
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	st := ts.client.Chat.Completions.NewStreaming(ctx, p, option.WithJSONSet("stream_options.continuous_usage_stats", true))
	var chunks []openai.ChatCompletionChunk
	for st.Next() {
		chunks = append(chunks, st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	final := chunks[len(chunks)-1].Usage
	want := final.PromptTokensDetails.CachedTokens
	if want == 0 {
		t.Fatalf("second turn reused no prompt tokens: %s", final.RawJSON())
	}
	for i, c := range chunks {
		if d := c.Usage.PromptTokensDetails; c.Usage.JSON.PromptTokensDetails.Valid() && d.CachedTokens != want {
			t.Errorf("chunk %d: usage %s; the request's cached_tokens is %d", i, c.Usage.RawJSON(), want)
		}
	}
}

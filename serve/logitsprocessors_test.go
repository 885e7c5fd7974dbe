package serve

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestLogitsProcessorsRefused: vLLM's logits_processors (qualified names
// of Python logits processors to run on the logits) is a 400 naming the
// field, on chat and on completions, as vLLM refuses it when not started
// with --logits-processor-pattern: this server runs no such code. Before,
// the answer was sampled without them, with only a warning header. An
// empty list or null asks for none and is answered.
func TestLogitsProcessorsRefused(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	ctx := context.Background()
	procs := option.WithJSONSet("logits_processors", []any{"mypkg.NoRepeat", map[string]any{"qualname": "mypkg.Ban", "args": []int{5}}})
	_, err := ts.client.Chat.Completions.New(ctx, chatParams("tiny", 1, 2), procs)
	wantFieldRefused(t, "chat", err, "logits_processors")
	_, err = ts.client.Completions.New(ctx, openai.CompletionNewParams{
		Model: "tiny", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("hi")}, MaxTokens: openai.Int(2),
	}, procs)
	wantFieldRefused(t, "completions", err, "logits_processors")
	for _, v := range []any{nil, []any{}} {
		if _, err := ts.client.Chat.Completions.New(ctx, chatParams("tiny", 1, 2), option.WithJSONSet("logits_processors", v)); err != nil {
			t.Errorf("logits_processors %v: %v", v, err)
		}
	}
}

// wantFieldRefused fails t unless err is the API's 400
// invalid_request_error naming param.
func wantFieldRefused(t *testing.T, what string, err error, param string) {
	t.Helper()
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Param != param || apiErr.Type != "invalid_request_error" {
		t.Errorf("%s: %v, want a 400 invalid_request_error naming %s", what, err, param)
	}
}

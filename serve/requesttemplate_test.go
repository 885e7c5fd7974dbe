package serve

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestRequestChatTemplateRefused: a chat request that sends its own chat
// template (vLLM's chat_template, or chat_template_kwargs' chat_template,
// which vLLM passes on to apply_chat_template as the template) is a 400
// naming the field, as vLLM answers without --trust-request-chat-template.
// Before, the prompt was rendered with the model's template instead, the
// answer carrying only a warning header (chat_template) or nothing at all
// (inside chat_template_kwargs, where it became an unused variable).
func TestRequestChatTemplateRefused(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	ctx := context.Background()
	const tmpl = "{% for m in messages %}{{ m.content }}{% endfor %}"
	for _, c := range []struct {
		param string
		opt   option.RequestOption
	}{
		{"chat_template", option.WithJSONSet("chat_template", tmpl)},
		{"chat_template_kwargs", option.WithJSONSet("chat_template_kwargs", map[string]any{"chat_template": tmpl})},
	} {
		_, err := ts.client.Chat.Completions.New(ctx, chatParams("tiny", 1, 2), c.opt)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Param != c.param || apiErr.Type != "invalid_request_error" {
			t.Errorf("a request template in %s: %v, want a 400 invalid_request_error naming %s", c.param, err, c.param)
		}
	}
	// Left out, null, or other kwargs: answered.
	for _, opt := range []option.RequestOption{
		option.WithJSONSet("chat_template", nil),
		option.WithJSONSet("chat_template_kwargs", map[string]any{"enable_thinking": false}),
	} {
		if _, err := ts.client.Chat.Completions.New(ctx, chatParams("tiny", 1, 2), opt); err != nil {
			t.Errorf("%v", err)
		}
	}
}

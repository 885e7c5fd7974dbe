package chattemplate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hone-rl/hone/format/chatmsg"
)

// ErrBadTemplate is matched (errors.Is) by the errors that say a model
// folder's chat template cannot be used at all: it does not compile,
// breaks a static limit, or fails Check. A server should refuse to start
// on it (bad input) rather than fail every request.
var ErrBadTemplate = errors.New("unusable chat template")

// badTemplate marks err as ErrBadTemplate without changing its text.
type badTemplate struct{ err error }

func (e *badTemplate) Error() string   { return e.err.Error() }
func (e *badTemplate) Unwrap() []error { return []error{e.err, ErrBadTemplate} }

// checkTool is the tool of Check's tool conversation.
var checkTool = json.RawMessage(`{"type": "function", "function": {"name": "get_weather", "description": "Get the weather of a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}`)

// Check renders small conversations with the template, so that a template
// that fails on any conversation, or runs past its limits, is found when
// the model is loaded instead of on the first request: a system, user and
// assistant turn (user and assistant alone when the template raises on a
// system message, as some do), and, when the template mentions tools, a
// tool call and its result. For the tool conversation only a limit or an
// engine failure counts: a template that cannot render tools still serves
// conversations without them, as before. Errors match ErrBadTemplate and
// name the template's file.
func (t *Template) Check(ctx context.Context) error {
	plain := []chatmsg.Message{{Role: "system", Content: "You are a helpful assistant."}, {Role: "user", Content: "Hello!"}, {Role: "assistant", Content: "Hi! How can I help?"}}
	in := Input{Messages: plain}
	_, err := t.Render(ctx, in)
	var raised *RaisedError
	if errors.As(err, &raised) {
		in.Messages = plain[1:]
		_, err = t.Render(ctx, in)
	}
	if err != nil {
		return t.checkError(in, "a system, user and assistant message", err)
	}
	in = Input{
		Messages: []chatmsg.Message{
			{Role: "user", Content: "What is the weather in Paris?"},
			{Role: "assistant", ToolCalls: []chatmsg.ToolCall{{ID: "call_1", Type: "function", Name: "get_weather", Arguments: `{"city": "Paris"}`}}},
			{Role: "tool", ToolCallID: "call_1", Content: "Sunny, 21 C"},
			{Role: "assistant", Content: "It is sunny in Paris."},
		},
		Tools: []json.RawMessage{checkTool},
	}
	name, err := t.pick(in)
	if err != nil || !strings.Contains(t.sources[name], "tools") {
		return nil
	}
	if _, err := t.Render(ctx, in); errors.Is(err, ErrLimit) || errors.Is(err, ErrEngine) {
		return t.checkError(in, "a tool call and its result", err)
	}
	return ctx.Err()
}

func (t *Template) checkError(in Input, what string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err // the caller gave up, the template did nothing wrong
	}
	name, _ := t.pick(in)
	where := fmt.Sprintf("chat template %q", name)
	if src := t.origins[name]; src != "" {
		where += " in " + src
	}
	return &badTemplate{fmt.Errorf("%s fails the load-time check (a conversation of %s): %w; fix or replace the template (a chat_template.jinja in the model folder overrides tokenizer_config.json's)", where, what, err)}
}

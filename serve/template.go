package serve

import (
	"context"
	"errors"
	"net/http"

	"github.com/hone-rl/hone/format/chattemplate"
)

// renderPrompt renders a chat request's conversation with the model's
// template under the request's context and deadline, and maps a failure to
// the response the client gets.
func (s *Server) renderPrompt(ctx context.Context, in chattemplate.Input) (string, error) {
	text, err := s.tmpl.Render(ctx, in)
	if err != nil {
		return "", s.templateError(ctx, err)
	}
	return text, nil
}

// templateError maps a rendering's error to HTTP. A template that raises
// (Llama 3.1 refusing parallel tool calls) or cannot take the request's
// messages is the request's problem: 400. A template stopped by its limits
// or crashing the engine is the model folder's: 500, because Hone's limits
// sit far above what any request within --max-body-bytes renders to with a
// working template, so retrying or rewording the request cannot help, and
// the operator has to fix the template (logged as an error too). A request
// cancelled or past its deadline gets what generation gives it then.
func (s *Server) templateError(ctx context.Context, err error) error {
	var raised *chattemplate.RaisedError
	switch {
	case errors.As(err, &raised):
		return badRequest("messages", "%v", err)
	case errors.Is(err, chattemplate.ErrLimit), errors.Is(err, chattemplate.ErrEngine):
		s.log.Error("chat template failed", "err", err)
		return &httpError{status: http.StatusInternalServerError, typ: "server_error", code: "chat_template_error",
			msg: "the model's chat template failed on this conversation: " + err.Error()}
	case ctx.Err() != nil:
		return genError(ctx, err)
	}
	return badRequest("messages", "rendering the chat template: %v", err)
}

package serve

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/hone-rl/hone/serve/constrain"
)

// jsonSchemaFormat is the response_format of a json_schema named "answer".
func jsonSchemaFormat(schema map[string]any) openai.ChatCompletionNewParamsResponseFormatUnion {
	return openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &openai.ResponseFormatJSONSchemaParam{
		JSONSchema: openai.ResponseFormatJSONSchemaJSONSchemaParam{Name: "answer", Schema: schema},
	}}
}

// TestJSONSchemaCutAtMaxTokens: a max_tokens below the schema's shortest
// document is not an error, as with OpenAI and vLLM: each choice heads
// for the end of the document, is cut at max_tokens and finishes with
// "length", its text a prefix of a valid document (not valid JSON
// itself), non-streamed and streamed.
func TestJSONSchemaCutAtMaxTokens(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"verdict": map[string]any{"enum": []string{"pass", "fail"}},
		"reason":  map[string]any{"type": "string"},
	}}
	raw, err := json.Marshal(schema)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := constrain.Compile(raw)
	if err != nil {
		t.Fatal(err)
	}
	const maxTokens = 8
	if shortest := cs.Start().MinBytes(); shortest <= maxTokens {
		t.Fatalf("the schema's shortest document has %d bytes, want more than %d", shortest, maxTokens)
	}
	// isCut checks that text is where a document of the schema was cut:
	// max_tokens bytes (one token per byte) that continue it, not a whole one.
	isCut := func(what, text string) {
		t.Helper()
		st, ok := cs.Start().Advance([]byte(text))
		if !ok || st.Done() || len(text) != maxTokens {
			t.Errorf("%s: text %q is not the first %d bytes of a document of the schema", what, text, maxTokens)
		}
	}
	p := chatParams("tiny", 5, maxTokens)
	p.N = openai.Int(3)
	p.ResponseFormat = jsonSchemaFormat(schema)
	ctx := context.Background()
	resp, err := ts.client.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatalf("max_tokens %d below the shortest document: %v, want the cut text", maxTokens, err)
	}
	if len(resp.Choices) != 3 || resp.Usage.CompletionTokens != 3*maxTokens {
		t.Fatalf("%d choices, %d completion tokens, want 3 of %d", len(resp.Choices), resp.Usage.CompletionTokens, maxTokens)
	}
	for _, ch := range resp.Choices {
		if ch.FinishReason != "length" {
			t.Errorf("choice %d: finish_reason %q, want length", ch.Index, ch.FinishReason)
		}
		isCut("choice", ch.Message.Content)
	}

	p.N = openai.Int(1)
	s := ts.client.Chat.Completions.NewStreaming(ctx, p)
	var text strings.Builder
	finish := ""
	for s.Next() {
		for _, ch := range s.Current().Choices {
			text.WriteString(ch.Delta.Content)
			if ch.FinishReason != "" {
				finish = ch.FinishReason
			}
		}
	}
	if err := s.Err(); err != nil || finish != "length" {
		t.Fatalf("stream: error %v, finish_reason %q, want length", err, finish)
	}
	isCut("stream", text.String())
}

// noQuoteModelDir copies the tiny model folder with weights edited so
// that the model gives the token `"` a logit of -Inf at every position
// and every other token a finite one, as a model whose numerics partly
// overflowed could: every embedding holds 1e6 in dimension 0, which then
// rules the residual stream (the layers add far less), the final norm
// keeps dimension 0 at gain 1, so that the last hidden state's entry there
// is about +5.7, and the lm_head row of `"` holds -3e38 there, whose
// product overflows to -Inf.
func noQuoteModelDir(t *testing.T) string {
	t.Helper()
	return patchedModelDir(t, "tiny-noquote", func(shape func(string) []int, set func(string, int, int, float32)) {
		for tok := range shape("model.embed_tokens.weight")[0] {
			set("model.embed_tokens.weight", tok, 0, 1e6)
		}
		set("model.norm.weight", 0, 0, 1)
		set("lm_head.weight", '"', 0, -3e38)
	})
}

// TestJSONSchemaNoTokenFits: when the model gives -Inf to every token
// that could continue the document (here `"`, the start of the object's
// first key), the constraint allows no token, and the request fails with
// the 500 of code constraint_no_token, as any constraint that leaves no
// token, naming the choice and the tokens before it ("{"), through
// openai-go, non-streamed and streamed; it used to end the sequence
// before the document was complete and fail with a bare 500 without a
// code. Without a response_format the same model answers.
func TestJSONSchemaNoTokenFits(t *testing.T) {
	ts := startServer(t, Options{Model: noQuoteModelDir(t), ServedModelName: "tiny"}, nil)
	ctx := context.Background()
	resp, err := ts.client.Chat.Completions.New(ctx, chatParams("tiny", 1, 20))
	if err != nil || strings.Contains(resp.Choices[0].Message.Content, `"`) {
		t.Fatalf("without a response_format: %v, want an answer without a quote", err)
	}

	p := chatParams("tiny", 1, 20)
	p.ResponseFormat = jsonSchemaFormat(map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}})
	words := []string{"choice 0 after 1 generated tokens", "output constraint", `model "tiny"`}
	_, err = ts.client.Chat.Completions.New(ctx, p)
	wantAPIError(t, "chat", err, codeConstraintNoToken, words...)

	s := ts.client.Chat.Completions.NewStreaming(ctx, p)
	var text strings.Builder
	for s.Next() {
		for _, ch := range s.Current().Choices {
			text.WriteString(ch.Delta.Content)
		}
	}
	wantStreamError(t, "chat stream", s.Err(), codeConstraintNoToken, words...)
	if text.String() != "{" {
		t.Errorf("streamed %q before the error, want the object's opening brace", text.String())
	}
	if v := metricValue(t, ts, `hone_serve_no_token_errors_total{code="constraint_no_token"}`); v != "2" {
		t.Errorf("constraint_no_token counted %s times, want 2", v)
	}
}

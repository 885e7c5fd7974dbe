package serve

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/hone-rl/hone/serve/constrain"
)

// TestResponseFormatJSONSchema: with json_schema every finished output of
// the random tiny model parses and fits the schema; json_object outputs
// that finish are JSON objects.
func TestResponseFormatJSONSchema(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"verdict": map[string]any{"enum": []string{"pass", "fail"}},
			"ok":      map[string]any{"type": "boolean"},
			"scores":  map[string]any{"type": "array", "items": map[string]any{"enum": []int{1, 2, 3}}},
		},
	}
	p := chatParams("tiny", 1, 200)
	p.N = openai.Int(8)
	p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &openai.ResponseFormatJSONSchemaParam{
		JSONSchema: openai.ResponseFormatJSONSchemaJSONSchemaParam{Name: "verdict", Schema: schema},
	}}
	resp, err := ts.client.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	finished := 0
	for _, ch := range resp.Choices {
		if ch.FinishReason != "stop" {
			continue
		}
		finished++
		var got struct {
			Verdict *string `json:"verdict"`
			OK      *bool   `json:"ok"`
			Scores  []int   `json:"scores"`
		}
		if err := json.Unmarshal([]byte(ch.Message.Content), &got); err != nil || got.Verdict == nil || got.OK == nil ||
			(*got.Verdict != "pass" && *got.Verdict != "fail") {
			t.Fatalf("output %q does not fit the schema (%v)", ch.Message.Content, err)
		}
	}
	if finished < 4 {
		t.Fatalf("only %d of 8 choices finished within 200 tokens", finished)
	}
	p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &openai.ResponseFormatJSONObjectParam{}}
	p.MaxTokens = openai.Int(40)
	resp, err = ts.client.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range resp.Choices {
		var obj map[string]any
		if ch.FinishReason == "stop" && json.Unmarshal([]byte(ch.Message.Content), &obj) != nil {
			t.Fatalf("json_object output %q is not an object", ch.Message.Content)
		}
		if len(ch.Message.Content) == 0 || ch.Message.Content[0] != '{' {
			t.Fatalf("json_object output %q does not start an object", ch.Message.Content)
		}
	}
}

// TestJSONSchemaEndsWithinMaxTokens: with max_tokens just above the
// schema's shortest document (read from constrain, plus the end token),
// every one of 8 random choices still ends "stop" with a document that
// parses and fits the schema, because the server gives each JSON
// constraint the request's max_tokens.
func TestJSONSchemaEndsWithinMaxTokens(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"verdict": map[string]any{"enum": []string{"pass", "fail"}},
			"reason":  map[string]any{"type": "string"},
			"score":   map[string]any{"type": "integer", "minimum": 0, "maximum": 100},
			"tags":    map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		},
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := constrain.Compile(raw)
	if err != nil {
		t.Fatal(err)
	}
	shortest := cs.Start().MinBytes()
	maxTokens := shortest + 1 + 4 // the end token, and a little room
	p := chatParams("tiny", 3, int64(maxTokens))
	p.N = openai.Int(8)
	p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &openai.ResponseFormatJSONSchemaParam{
		JSONSchema: openai.ResponseFormatJSONSchemaJSONSchemaParam{Name: "verdict", Schema: schema},
	}}
	resp, err := ts.client.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 8 {
		t.Fatalf("%d choices, want 8", len(resp.Choices))
	}
	for _, ch := range resp.Choices {
		if ch.FinishReason != "stop" {
			t.Fatalf("choice %d: finish_reason %q with max_tokens %d (shortest document %d bytes): %q",
				ch.Index, ch.FinishReason, maxTokens, shortest, ch.Message.Content)
		}
		var got struct {
			Verdict *string   `json:"verdict"`
			Reason  *string   `json:"reason"`
			Score   *float64  `json:"score"`
			Tags    *[]string `json:"tags"`
		}
		dec := json.NewDecoder(strings.NewReader(ch.Message.Content))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil || got.Verdict == nil || got.Reason == nil || got.Score == nil || got.Tags == nil ||
			(*got.Verdict != "pass" && *got.Verdict != "fail") || *got.Score != math.Trunc(*got.Score) || *got.Score < 0 || *got.Score > 100 {
			t.Fatalf("choice %d: output %q does not fit the schema (%v)", ch.Index, ch.Message.Content, err)
		}
		if dec.More() {
			t.Fatalf("choice %d: output %q has bytes after the document", ch.Index, ch.Message.Content)
		}
	}
}

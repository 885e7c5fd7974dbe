package serve

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/openai/openai-go/v3"
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

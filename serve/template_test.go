package serve

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/hone-rl/hone/format/chatmsg"
	"github.com/hone-rl/hone/format/chattemplate"
	"github.com/hone-rl/hone/format/tokenizer"
)

// TestToolsReachTheTemplate serves the tiny model with Qwen2.5's chat
// template: tools, an assistant tool call and a tool result sent through
// the official client render to exactly the prompt the template gives for
// the same conversation.
func TestToolsReachTheTemplate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	if err := os.CopyFS(dir, os.DirFS(tinyDir(t))); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("..", "testdata", "templates", "qwen2.5", "chat_template.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, Options{Model: dir}, nil)
	weather := shared.FunctionDefinitionParam{
		Name:        "get_weather",
		Description: openai.String("Weather of a city"),
		Parameters:  shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}},
	}
	p := openai.ChatCompletionNewParams{
		Model: "tiny",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.UserMessage("Weather in Paris?"),
			{OfAssistant: &openai.ChatCompletionAssistantMessageParam{ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: "call_1", Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "get_weather", Arguments: `{"city": "Paris"}`}},
			}}}},
			openai.ToolMessage("sunny, 21 C", "call_1"),
		},
		Tools:     []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(weather)},
		MaxTokens: openai.Int(2),
		Seed:      openai.Int(1),
	}
	resp, err := ts.client.Chat.Completions.New(context.Background(), p, option.WithJSONSet("return_token_ids", true))
	if err != nil {
		t.Fatal(err)
	}
	var got []int32
	if err := json.Unmarshal([]byte(resp.JSON.ExtraFields["prompt_token_ids"].Raw()), &got); err != nil {
		t.Fatal(err)
	}

	// The same conversation rendered directly.
	tmpl, err := chattemplate.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(p)
	var req struct {
		Messages []chatmsg.Message `json:"messages"`
		Tools    []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	text, err := tmpl.Render(t.Context(), chattemplate.Input{Messages: req.Messages, Tools: req.Tools, AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<tools>", `"name": "get_weather"`, "<tool_call>", `"city": "Paris"`, "<tool_response>\nsunny, 21 C\n</tool_response>"} {
		if !strings.Contains(text, want) {
			t.Fatalf("rendered prompt lacks %q:\n%s", want, text)
		}
	}
	want := toInt32(tok.Encode(text, false))
	if string(tok.Decode(toInts(got), false)) != text || len(got) != len(want) {
		t.Fatalf("served prompt differs from the template's:\n%s\n---\n%s", tok.Decode(toInts(got), false), text)
	}
}

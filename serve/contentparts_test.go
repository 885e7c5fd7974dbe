package serve

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// tinyWithTemplate is the tiny model with the chat template of
// testdata/templates/<name> (its chat_template.jinja, else the one in its
// tokenizer_config.json).
func tinyWithTemplate(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tiny")
	if err := os.CopyFS(dir, os.DirFS(tinyDir(t))); err != nil {
		t.Fatal(err)
	}
	from := filepath.Join("..", "testdata", "templates", name)
	src, err := os.ReadFile(filepath.Join(from, "chat_template.jinja"))
	if err != nil {
		b, err := os.ReadFile(filepath.Join(from, "tokenizer_config.json"))
		if err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			ChatTemplate string `json:"chat_template"`
		}
		if err := json.Unmarshal(b, &cfg); err != nil || cfg.ChatTemplate == "" {
			t.Fatalf("%s: no chat_template string (%v)", from, err)
		}
		src = []byte(cfg.ChatTemplate)
	}
	if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestContentPartsWithTextTemplates: content sent as a list of text parts
// (what OpenAI's clients send for multi-part messages) reaches a template
// that takes content as a string — Qwen2.5's, Qwen3's, Llama 3.1's, which
// never loop over a message's content — as the parts' text joined by
// newlines, as vLLM's "auto" chat-template content format gives it
// (chattemplate.Render): the prompt is that of the same conversation sent
// as strings. (The list itself rendered as Python's repr of it into
// Qwen2.5's and Llama's prompts, and failed Qwen3's template with a 400.)
func TestContentPartsWithTextTemplates(t *testing.T) {
	for _, name := range []string{"qwen2.5", "qwen3", "llama3.1"} {
		t.Run(name, func(t *testing.T) {
			ts := startServer(t, Options{Model: tinyWithTemplate(t, name)}, nil)
			prompt := func(msgs ...openai.ChatCompletionMessageParamUnion) []int32 {
				t.Helper()
				resp, err := ts.client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
					Model: "tiny", Messages: msgs, MaxTokens: openai.Int(1),
				}, option.WithJSONSet("return_token_ids", true))
				if err != nil {
					t.Fatal(err)
				}
				return intsField(t, resp.JSON.ExtraFields["prompt_token_ids"].Raw())
			}
			parts := prompt(
				openai.SystemMessage([]openai.ChatCompletionContentPartTextParam{{Text: "be brief"}}),
				openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{openai.TextContentPart("hello"), openai.TextContentPart("there")}),
			)
			text := prompt(openai.SystemMessage("be brief"), openai.UserMessage("hello\nthere"))
			if !slices.Equal(parts, text) {
				t.Fatalf("content parts rendered as\n%q\nthe same text as strings as\n%q", ts.s.tok.Decode(toInts(parts), false), ts.s.tok.Decode(toInts(text), false))
			}
		})
	}
}

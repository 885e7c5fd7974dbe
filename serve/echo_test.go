package serve

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/modelfolder"
	mt "github.com/hone-rl/hone/format/modelfolder/modelfoldertest"
)

// TestEchoIsThePromptAsSent: echo gives a string prompt back as it was
// sent, as vLLM does, though the tokenizer put its BOS token in front
// (Llama's and Gemma's do; the prompt's token ids show it did); before, the
// echo was the tokens decoded and began with "<|begin_of_text|>". A prompt
// of token ids echoes their text, BOS included.
func TestEchoIsThePromptAsSent(t *testing.T) {
	dir := mt.Llama32(t)
	tok := mt.ByteTokenizer([]string{"<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>"})
	tok["post_processor"] = map[string]any{"type": "TemplateProcessing",
		"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": "<|begin_of_text|>", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
		"special_tokens": map[string]any{"<|begin_of_text|>": map[string]any{"id": "<|begin_of_text|>", "ids": []int{mt.BeginOfText}, "tokens": []string{"<|begin_of_text|>"}}},
	}
	mt.WriteJSON(t, filepath.Join(dir, modelfolder.TokenizerFile), tok)
	ts := startServer(t, Options{Model: dir, ServedModelName: "llama32"}, nil)
	for _, c := range []struct{ prompt, want string }{
		{`"once upon"`, "once upon"},
		{`["once upon"]`, "once upon"},
		{`[` + strconv.Itoa(mt.BeginOfText) + `, 111, 110]`, "<|begin_of_text|>on"},
	} {
		status, body := ts.post(t, "/v1/completions", `{"model": "llama32", "prompt": `+c.prompt+`, "max_tokens": 1, "echo": true, "return_token_ids": true}`)
		if status != http.StatusOK {
			t.Fatalf("%s: status %d: %s", c.prompt, status, body)
		}
		var resp struct {
			Choices []struct {
				Text           string
				PromptTokenIDs []int `json:"prompt_token_ids"`
			}
		}
		if err := json.Unmarshal([]byte(body), &resp); err != nil {
			t.Fatal(err)
		}
		ch := resp.Choices[0]
		if len(ch.PromptTokenIDs) == 0 || ch.PromptTokenIDs[0] != mt.BeginOfText {
			t.Fatalf("%s: prompt ids %v do not start with BOS; the test tests nothing", c.prompt, ch.PromptTokenIDs)
		}
		if !strings.HasPrefix(ch.Text, c.want) {
			t.Errorf("%s: echoed text %q, want it to start with %q", c.prompt, ch.Text, c.want)
		}
		if strings.HasPrefix(c.prompt, `"`) && strings.Contains(ch.Text, "<|begin_of_text|>") {
			t.Errorf("%s: echoed text %q holds the BOS token", c.prompt, ch.Text)
		}
	}
}

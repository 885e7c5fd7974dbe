package serve

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestMinTokensEOSPastVocab: a folder whose tokenizer names as eos_token
// an added token past the model's vocabulary (tokenizer.json grown without
// the embedding) serves; the model can never choose that id, so it ends
// nothing, and min_tokens, which holds back the end-of-sequence ids, must
// not index the logits row with it: that took down the engine, and every
// request with it, on the first min_tokens request.
func TestMinTokensEOSPastVocab(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(tinyDir(t))); err != nil {
		t.Fatal(err)
	}
	edit := func(name string, f func(m map[string]any)) {
		t.Helper()
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		f(m)
		if b, err = json.Marshal(m); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const past = 259 // config.json's vocab_size
	tok := map[string]any{"content": "<|eot|>", "id": past, "lstrip": false, "normalized": false, "rstrip": false, "single_word": false, "special": true}
	edit("tokenizer.json", func(m map[string]any) { m["added_tokens"] = append(m["added_tokens"].([]any), tok) })
	edit("tokenizer_config.json", func(m map[string]any) {
		m["added_tokens_decoder"].(map[string]any)["259"] = tok
		m["eos_token"] = "<|eot|>"
	})
	ts := startServer(t, Options{Model: dir, ServedModelName: "tiny"}, nil)
	for range 2 { // the second finds the server still serving
		status, out := ts.post(t, "/v1/completions", `{"model":"tiny","prompt":"hi","max_tokens":4,"min_tokens":2,"temperature":0}`)
		if status != http.StatusOK {
			t.Fatalf("min_tokens with an eos_token past the vocabulary: %d %s", status, out)
		}
	}
}

package serve

import (
	"context"
	"strconv"
	"testing"
)

// TestModelsMaxModelLen: /v1/models, asked over HTTP with openai-go, gives
// every model's max_model_len, the context a prompt and its completion
// share, as vLLM's model card does: clients read it to size prompts and
// max_tokens. An adapter shares the base model's context. Before, no
// entry had it, and a client had to learn the context from a 400.
func TestModelsMaxModelLen(t *testing.T) {
	dir := tinyDir(t)
	adir := t.TempDir()
	writeStep(t, dir, adir, "r1", 2)
	ts := startServer(t, Options{Model: dir, Adapters: adir}, nil)
	page, err := ts.client.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := strconv.Itoa(ts.s.maxCtx)
	if len(page.Data) != 3 {
		t.Fatalf("models %+v, want tiny, r1 and r1@2", page.Data)
	}
	for _, m := range page.Data {
		if got := m.JSON.ExtraFields["max_model_len"].Raw(); got != want {
			t.Errorf("%s: max_model_len %s, want %s", m.ID, got, want)
		}
	}
}

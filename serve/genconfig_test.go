package serve

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/internal/waitfor"
)

// tinyWithGenConfig is a copy of the tiny model folder whose
// generation_config.json holds gen's keys besides its token ids.
func tinyWithGenConfig(t *testing.T, gen map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	ents, err := os.ReadDir(tinyDir(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == "SHA256SUMS" {
			continue // the copy's generation_config.json differs
		}
		b, err := os.ReadFile(filepath.Join(tinyDir(t), e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "generation_config.json" {
			var cfg map[string]any
			if err := json.Unmarshal(b, &cfg); err != nil {
				t.Fatal(err)
			}
			for k, v := range gen {
				cfg[k] = v
			}
			if b, err = json.Marshal(cfg); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestGenerationConfigDefaults: as vLLM's --generation-config auto, the
// sampling fields a request leaves out (temperature, top_p, top_k, min_p,
// repetition_penalty, and max_tokens from max_new_tokens) take the model
// folder's generation_config.json values, logged once at start; a
// request's own values win, except that max_new_tokens caps max_tokens as
// in vLLM. Before, hone-serve always sampled at temperature 1 with its
// --max-tokens. --generation-config vllm, the default (as ART starts
// vLLM), keeps the fixed defaults, and another value is refused at start.
func TestGenerationConfigDefaults(t *testing.T) {
	dir := tinyWithGenConfig(t, map[string]any{"do_sample": true, "temperature": 0.0, "max_new_tokens": 3})
	var logs waitfor.Buffer // written by the server's goroutines
	ts := startServer(t, Options{Model: dir, GenerationConfig: "auto", Log: slog.New(slog.NewTextHandler(&logs, nil))}, nil)
	type answer struct {
		Choices []struct {
			TokenIDs []int32 `json:"token_ids"`
		}
	}
	ask := func(ts *testServer, extra string) [][]int32 {
		t.Helper()
		status, out := ts.post(t, "/v1/completions", `{"model":"`+ts.s.name+`","prompt":"hi","n":4,"seed":3,"ignore_eos":true,"return_token_ids":true`+extra+`}`)
		if status != http.StatusOK {
			t.Fatalf("%s: %d %s", extra, status, out)
		}
		var a answer
		if err := json.Unmarshal([]byte(out), &a); err != nil {
			t.Fatal(err)
		}
		var ids [][]int32
		for _, c := range a.Choices {
			ids = append(ids, c.TokenIDs)
		}
		return ids
	}
	same := func(ids [][]int32) bool {
		return !slices.ContainsFunc(ids, func(c []int32) bool { return !slices.Equal(c, ids[0]) })
	}
	greedy := ask(ts, "")
	if !same(greedy) || len(greedy[0]) != 3 {
		t.Errorf("auto, fields left out: choices %v; want 4 equal (temperature 0) of 3 tokens (max_new_tokens)", greedy)
	}
	if got := ask(ts, `,"temperature":1,"max_tokens":2`); same(got) || len(got[0]) != 2 {
		t.Errorf("auto, temperature 1 and max_tokens 2 sent: choices %v; want them sampled, of 2 tokens", got)
	}
	if got := ask(ts, `,"max_tokens":10`); len(got[0]) != 3 {
		t.Errorf("auto, max_tokens 10 over max_new_tokens 3: %d tokens, want 3 (vLLM's cap)", len(got[0]))
	}
	if !strings.Contains(logs.String(), "--generation-config vllm") || !strings.Contains(logs.String(), "temperature=0") {
		t.Errorf("the start's log does not say which defaults came from generation_config.json:\n%s", logs.String())
	}
	ts.close(t)
	// top_k 1 and min_p 1 each leave the best token alone.
	for _, gen := range []map[string]any{{"top_k": 1}, {"min_p": 1.0}} {
		one := startServer(t, Options{Model: tinyWithGenConfig(t, gen), GenerationConfig: "auto", MaxTokens: 6}, nil)
		if got := ask(one, ""); !same(got) {
			t.Errorf("generation_config.json %v, fields left out: choices %v, want 4 equal", gen, got)
		}
		one.close(t)
	}

	// "" is the flag's default.
	var fixed *testServer
	for _, mode := range []string{"vllm", ""} {
		fixed = startServer(t, Options{Model: dir, GenerationConfig: mode, MaxTokens: 16}, nil)
		if got := ask(fixed, ""); same(got) || len(got[0]) <= 3 {
			t.Errorf("--generation-config %q, fields left out: choices %v; want them sampled at temperature 1, longer than 3", mode, got)
		}
		fixed.close(t)
	}

	if _, err := NewServer(Options{Model: dir, GenerationConfig: "model", Backend: fixed.s.o.Backend}); err == nil || !strings.Contains(err.Error(), "generation-config") {
		t.Errorf("--generation-config model: %v, want an error naming the flag", err)
	}
	bad := tinyWithGenConfig(t, map[string]any{"repetition_penalty": 0})
	if _, err := NewServer(Options{Model: bad, Backend: fixed.s.o.Backend, GenerationConfig: "auto"}); err == nil || !strings.Contains(err.Error(), "repetition_penalty") {
		t.Errorf("repetition_penalty 0 in generation_config.json: %v, want an error naming it", err)
	}
	if _, err := NewServer(Options{Model: bad, Backend: fixed.s.o.Backend, GenerationConfig: "vllm"}); err != nil {
		t.Errorf("repetition_penalty 0 with --generation-config vllm, which does not read it: %v", err)
	}
}

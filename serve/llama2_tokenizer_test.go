package serve

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/format/modelfolder"
	mt "github.com/hone-rl/hone/format/modelfolder/modelfoldertest"
	"github.com/hone-rl/hone/format/trajectory"
)

// mistralTemplate has the shape of Mistral 7B Instruct's chat template: the
// user's text in [INST] … [/INST], the answer glued after it and closed by
// </s>, the <s> written by the template.
const mistralTemplate = "{{ bos_token }}{% for message in messages %}" +
	"{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}" +
	"{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token }}{% endif %}{% endfor %}"

// mistralFolder writes a tiny Mistral model (model_type mistral, every
// layer attending through a window of 4 keys) with 32000 rows and the
// llama2 package's tokenizer (Mistral 7B's vocabulary in Llama 2's kind of
// file: Prepend "▁", byte fallback, a Strip decoder), which
// format/tokenizer's golden test checks, with a Mistral-shaped chat
// template.
func mistralFolder(t *testing.T) string {
	t.Helper()
	dir := mt.Llama32Vocab(t, 32000)
	var cfg map[string]any
	b, err := os.ReadFile(filepath.Join(dir, modelfolder.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["model_type"], cfg["architectures"], cfg["sliding_window"] = "mistral", []string{"MistralForCausalLM"}, 4
	cfg["bos_token_id"], cfg["eos_token_id"] = 1, 2
	delete(cfg, "rope_scaling")
	delete(cfg, "attention_bias")
	delete(cfg, "mlp_bias")
	mt.WriteJSON(t, filepath.Join(dir, modelfolder.ConfigFile), cfg)
	f, err := os.Open("../testdata/tokenizers/llama2/tokenizer.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err = io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, modelfolder.TokenizerFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	mt.WriteJSON(t, filepath.Join(dir, modelfolder.TokenizerConfigFile), map[string]any{
		"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "add_bos_token": true, "chat_template": mistralTemplate,
	})
	mt.WriteJSON(t, filepath.Join(dir, modelfolder.GenerationConfigFile), map[string]any{"bos_token_id": 1, "eos_token_id": 2})
	return dir
}

// TestMistralTokenizerServesAndLaysOut: a Mistral folder with its Llama
// 2-kind tokenizer serves (before, its model_type and its tokenizer's
// Prepend normalizer were refused and the folder did not open): the prompt is the template's text encoded with one
// <s>; an answer that starts with a word keeps its space (" Hello", as
// vLLM streams it, not the whole-text decode's "Hello"), so that the
// conversation rendered again for training holds the tokens sampled, which
// layout marks trainable.
func TestMistralTokenizerServesAndLaysOut(t *testing.T) {
	dir := mistralFolder(t)
	ts := startServer(t, Options{Model: dir, ServedModelName: "m"}, nil)
	if c := ts.s.m.Config; c.Family != "mistral" || c.LayerKinds != "S" || c.SlidingWindow != 4 {
		t.Errorf("model %s, layers %q, window %d; want mistral, every layer sliding through 4", c.Family, c.LayerKinds, c.SlidingWindow)
	}
	hello, ok := ts.s.tok.TokenID("▁Hello")
	if !ok {
		t.Fatal("no token ▁Hello")
	}
	// logit_bias makes the tiny random model say "▁Hello" and then </s>.
	body := `{"model": "m", "messages": [{"role": "user", "content": "Hi  there 𝔘"}], "max_tokens": 2, "temperature": 0,
		"return_token_ids": true, "logprobs": true, "logit_bias": {"` + strconv.Itoa(hello) + `": 100}}`
	status, resp := ts.post(t, "/v1/chat/completions", body)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, resp)
	}
	var r struct {
		PromptTokenIDs []int32 `json:"prompt_token_ids"`
		Choices        []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			TokenIDs []int32 `json:"token_ids"`
			Logprobs struct {
				Content []struct {
					Logprob float32 `json:"logprob"`
				} `json:"content"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(resp), &r); err != nil {
		t.Fatal(err)
	}
	prompt := "<s>[INST] Hi  there 𝔘 [/INST]"
	if want := ts.s.tok.Encode(prompt, false); !slices.Equal(toInts(r.PromptTokenIDs), want) {
		t.Errorf("prompt ids %v, want %v (%q)", r.PromptTokenIDs, want, prompt)
	}
	c := r.Choices[0]
	if c.TokenIDs[0] != int32(hello) || c.Message.Content[:6] != " Hello" {
		t.Fatalf("answer %q (ids %v), want \" Hello…\" from token %d", c.Message.Content, c.TokenIDs, hello)
	}

	m, err := layout.LoadModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	lps := make([]float32, len(c.Logprobs.Content))
	for i, lp := range c.Logprobs.Content {
		lps[i] = lp.Logprob
	}
	msgs := []trajectory.Message{
		{Role: "user", Content: "Hi  there 𝔘"},
		{Role: "assistant", Content: c.Message.Content, Trainable: true, TokenIDs: c.TokenIDs, Logprobs: lps},
	}
	l, err := m.Layout(context.Background(), msgs, nil, layout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	seq := l.Sequences[0]
	if want := append(append([]int32(nil), r.PromptTokenIDs...), c.TokenIDs...); !slices.Equal(seq.IDs[:len(want)], want) {
		t.Errorf("laid out %v, want the prompt and the answer as sampled %v", seq.IDs, want)
	}
	if text, _ := m.Render(context.Background(), msgs, nil, false, nil); ts.s.tok.Encode(text, false)[len(r.PromptTokenIDs)] != hello {
		t.Errorf("the rendered conversation %q does not encode the answer's first token as sampled", text)
	}
	for i := range c.TokenIDs {
		if !seq.Trainable[len(r.PromptTokenIDs)+i] {
			t.Errorf("sampled token %d not trainable", i)
		}
	}
}

// TestCompletionsFollowTokenizerConfigFlags: a string prompt to
// /v1/completions gets the special tokens transformers (and so vLLM) adds
// for the folder, from tokenizer_config.json's add_bos_token and
// add_eos_token under LlamaTokenizer (LlamaTokenizerFast rebuilds its
// post-processor from them): here <s> and </s> around the text, where
// tokenizer.json alone says <s> only. A chat prompt, whose template writes
// <s> itself, is encoded without them: one <s>, no </s> after the prompt.
func TestCompletionsFollowTokenizerConfigFlags(t *testing.T) {
	dir := mistralFolder(t)
	mt.WriteJSON(t, filepath.Join(dir, modelfolder.TokenizerConfigFile), map[string]any{
		"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
		"add_bos_token": true, "add_eos_token": true, "chat_template": mistralTemplate,
	})
	ts := startServer(t, Options{Model: dir, ServedModelName: "m"}, nil)
	const bos, eos = 1, 2
	promptIDs := func(path, body string) []int {
		t.Helper()
		status, resp := ts.post(t, path, body)
		if status != http.StatusOK {
			t.Fatalf("%s: status %d: %s", path, status, resp)
		}
		var r struct {
			PromptTokenIDs []int32 `json:"prompt_token_ids"`
			Choices        []struct {
				PromptTokenIDs []int32 `json:"prompt_token_ids"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(resp), &r); err != nil {
			t.Fatal(err)
		}
		if r.PromptTokenIDs == nil && len(r.Choices) > 0 {
			return toInts(r.Choices[0].PromptTokenIDs)
		}
		return toInts(r.PromptTokenIDs)
	}
	got := promptIDs("/v1/completions", `{"model": "m", "prompt": "Hi there", "max_tokens": 1, "return_token_ids": true}`)
	want := slices.Concat([]int{bos}, ts.s.tok.Encode("Hi there", false), []int{eos})
	if !slices.Equal(got, want) {
		t.Errorf("completions prompt ids %v, want %v", got, want)
	}
	got = promptIDs("/v1/chat/completions", `{"model": "m", "messages": [{"role": "user", "content": "Hi there"}], "max_tokens": 1, "return_token_ids": true}`)
	if want := ts.s.tok.Encode("<s>[INST] Hi there [/INST]", false); !slices.Equal(got, want) {
		t.Errorf("chat prompt ids %v, want %v", got, want)
	}
}

// Package modelfoldertest writes tiny model folders for tests: complete
// Hugging Face folders (config, generation config, weights, tokenizer, chat
// template) whose special tokens play the roles they play in a real model,
// at ids a tiny vocabulary can hold.
package modelfoldertest

import (
	"encoding/json"
	"github.com/hone-rl/hone/format/tokenizer"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/hone-rl/hone/format/hfconfig"
	"github.com/hone-rl/hone/format/modelfolder"
	"github.com/hone-rl/hone/format/safetensors"
)

// The special tokens of the Llama 3.2 folder, after the 256 byte tokens;
// the comments give Llama 3.2's own ids.
const (
	BeginOfText = 256 // <|begin_of_text|>, 128000
	EndOfText   = 257 // <|end_of_text|>, 128001
	StartHeader = 258 // <|start_header_id|>, 128006
	EndHeader   = 259 // <|end_header_id|>, 128007
	EOM         = 260 // <|eom_id|>, 128008
	EOT         = 261 // <|eot_id|>, 128009
)

var llamaSpecials = []string{"<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>"}

// Llama3Template is Llama 3's chat template without its tool and date
// preamble: a header per message, each turn closed by <|eot_id|>.
const Llama3Template = "{{- bos_token }}{%- for message in messages %}" +
	"{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}" +
	"{%- endfor %}" +
	"{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"

// Llama32 writes, in a new temporary folder, a model folder laid out like
// meta-llama/Llama-3.2-1B-Instruct's and scaled down (hidden 8, one layer,
// tied embeddings, llama3 RoPE, a byte-level tokenizer of 262 tokens):
// generation_config.json's eos_token_id is [EndOfText, EOM, EOT] as Llama
// 3.2's is [128001, 128008, 128009], and tokenizer_config.json's eos_token
// is <|eot_id|>. It returns the folder.
func Llama32(t testing.TB) string {
	t.Helper()
	return Llama32Vocab(t, len(llamaSpecials)+256)
}

// Llama32Vocab is Llama32 with vocab rows in the embedding instead of the
// byte tokenizer's 262, for a caller that copies a real tokenizer of that
// many tokens (and its special tokens' config) over the folder's own.
func Llama32Vocab(t testing.TB, vocab int) string {
	t.Helper()
	dir := t.TempDir()
	eos := []int{EndOfText, EOM, EOT}
	cfg := map[string]any{
		"architectures": []string{"LlamaForCausalLM"}, "model_type": "llama",
		"vocab_size": vocab, "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1,
		"num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "hidden_act": "silu", "rms_norm_eps": 1e-5,
		"rope_theta": 500000.0, "max_position_embeddings": 131072, "tie_word_embeddings": true,
		"rope_scaling": map[string]any{"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
			"high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
		"attention_bias": false, "mlp_bias": false, "torch_dtype": "bfloat16",
		"bos_token_id": BeginOfText, "eos_token_id": eos,
	}
	files := []struct {
		name string
		v    any
	}{
		{modelfolder.ConfigFile, cfg},
		{modelfolder.GenerationConfigFile, map[string]any{"bos_token_id": BeginOfText, "eos_token_id": eos, "do_sample": true, "temperature": 0.6, "top_p": 0.9}},
		{modelfolder.TokenizerFile, ByteTokenizer(llamaSpecials)},
		{modelfolder.TokenizerConfigFile, map[string]any{
			"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>", "chat_template": Llama3Template, "model_max_length": 131072,
		}},
	}
	for _, f := range files {
		WriteJSON(t, filepath.Join(dir, f.name), f.v)
	}
	writeWeights(t, dir, cfg)
	return dir
}

// WriteJSON writes v as JSON to path.
func WriteJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeWeights writes random bfloat16 weights for every tensor the config
// implies, so that the folder loads and generates.
func writeWeights(t testing.TB, dir string, cfg map[string]any) {
	t.Helper()
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := hfconfig.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(32, 1))
	var ts []safetensors.Tensor
	for _, s := range modelfolder.Expected(c) {
		if s.Optional {
			continue
		}
		n := 1
		for _, d := range s.Shape {
			n *= d
		}
		vals := make([]float32, n)
		for i := range vals {
			vals[i] = float32(rng.NormFloat64() * 0.5)
		}
		x, err := safetensors.FromFloat32Tensor(s.Name, safetensors.BF16, s.Shape, vals)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, x)
	}
	if err := safetensors.Write(filepath.Join(dir, "model.safetensors"), ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
}

// ByteTokenizer is a tokenizer.json for GPT-2's byte-level alphabet (one
// token per byte, ids 0-255, no merges) followed by the special tokens
// given, from id 256.
func ByteTokenizer(specials []string) map[string]any {
	vocab := map[string]int{}
	for b, r := range tokenizer.ByteLevelAlphabet() {
		vocab[string(r)] = b
	}
	var added []map[string]any
	for i, s := range specials {
		added = append(added, map[string]any{"id": 256 + i, "content": s, "single_word": false, "lstrip": false,
			"rstrip": false, "normalized": false, "special": true})
	}
	byteLevel := map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}
	return map[string]any{
		"version": "1.0", "added_tokens": added, "normalizer": nil,
		"pre_tokenizer": byteLevel, "post_processor": byteLevel, "decoder": byteLevel,
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": "",
			"end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
			"vocab": vocab, "merges": []string{}},
	}
}

// Tokens are the ids of text in the byte-level tokenizer: one per byte.
func Tokens(text string) []int32 {
	ids := make([]int32, len(text))
	for i := range len(text) {
		ids[i] = int32(text[i])
	}
	return ids
}

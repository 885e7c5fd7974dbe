package modelfoldertest

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/modelfolder"
	"github.com/hone-rl/hone/format/safetensors"
)

// The special tokens of the Gemma 3 folder, after the 256 byte tokens; the
// comments give Gemma 3's own ids.
const (
	GemmaPad         = 256 // <pad>, 0
	GemmaEOS         = 257 // <eos>, 1
	GemmaBOS         = 258 // <bos>, 2
	GemmaStartOfTurn = 259 // <start_of_turn>, 105
	GemmaEndOfTurn   = 260 // <end_of_turn>, 106
)

var gemmaSpecials = []string{"<pad>", "<eos>", "<bos>", "<start_of_turn>", "<end_of_turn>"}

// Gemma3Template is Gemma 3's chat template without its system-prompt and
// image handling: a turn per message, "model" for the assistant, each
// closed by <end_of_turn>.
const Gemma3Template = "{{- bos_token }}{%- for message in messages %}" +
	"{%- set role = 'model' if message['role'] == 'assistant' else message['role'] %}" +
	"{{- '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}" +
	"{%- endfor %}" +
	"{%- if add_generation_prompt %}{{- '<start_of_turn>model\n' }}{%- endif %}"

// Gemma3Text writes, in a new temporary folder, a model folder laid out like
// google/gemma-3-1b-it's and scaled down (hidden 8, two layers, the first
// sliding with a window of 2, tied embeddings, a byte-level tokenizer of 261
// tokens): generation_config.json's eos_token_id is [GemmaEOS,
// GemmaEndOfTurn] as Gemma 3's is [1, 106]. It returns the folder.
func Gemma3Text(t testing.TB) string {
	t.Helper()
	return Gemma3TextVocab(t, len(gemmaSpecials)+256)
}

// Gemma3TextVocab is Gemma3Text with vocab rows in the embedding instead of
// the byte tokenizer's 261: with 262144, Gemma 3 1B's, the folder takes the
// real Gemma 3 tokenizer files a caller copies over its own.
func Gemma3TextVocab(t testing.TB, vocab int) string {
	t.Helper()
	dir := t.TempDir()
	eos := []int{GemmaEOS, GemmaEndOfTurn}
	cfg := map[string]any{
		"architectures": []string{"Gemma3ForCausalLM"}, "model_type": "gemma3_text",
		"vocab_size": vocab, "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 2,
		"num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "hidden_activation": "gelu_pytorch_tanh",
		"rms_norm_eps": 1e-6, "rope_theta": 1e6, "rope_local_base_freq": 10000.0, "rope_scaling": nil,
		"query_pre_attn_scalar": 4, "sliding_window": 2, "sliding_window_pattern": 2, "max_position_embeddings": 32768,
		"attention_bias": false, "attention_dropout": 0.0, "attn_logit_softcapping": nil, "final_logit_softcapping": nil,
		"torch_dtype": "bfloat16", "bos_token_id": GemmaBOS, "eos_token_id": eos, "pad_token_id": GemmaPad,
	}
	files := []struct {
		name string
		v    any
	}{
		{modelfolder.ConfigFile, cfg},
		{modelfolder.GenerationConfigFile, map[string]any{"bos_token_id": GemmaBOS, "eos_token_id": eos, "pad_token_id": GemmaPad, "do_sample": true, "top_k": 64, "top_p": 0.95}},
		{modelfolder.TokenizerFile, ByteTokenizer(gemmaSpecials)},
		{modelfolder.TokenizerConfigFile, map[string]any{
			"bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>", "chat_template": Gemma3Template,
		}},
	}
	for _, f := range files {
		WriteJSON(t, filepath.Join(dir, f.name), f.v)
	}
	writeWeights(t, dir, cfg)
	return dir
}

// VisionTensors is how many vision tower and projector tensors
// Gemma3Multimodal adds.
const VisionTensors = 4

// Gemma3Multimodal writes, in a new temporary folder, the gemma3_text model
// folder src as a Gemma3ForConditionalGeneration folder (gemma-3-4b-it's
// layout) of the same weights: config.json with src's config under
// text_config (its eos ids and dtype moved to the top level, as gemma-3-4b-it
// has them) beside a vision_config and the image-token keys; the text
// tensors renamed by layout (modelfolder.Layouts); VisionTensors small
// vision tower and projector tensors, named as that layout names them, which
// a text-only loader must leave aside; src's other files copied. It returns
// the folder.
func Gemma3Multimodal(t testing.TB, src string, layout modelfolder.Layout) string {
	t.Helper()
	dir := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || name == modelfolder.ConfigFile || strings.HasSuffix(name, ".safetensors") || strings.HasSuffix(name, ".safetensors.index.json") {
			continue
		}
		copyFile(t, filepath.Join(src, name), filepath.Join(dir, name))
	}

	b, err := os.ReadFile(filepath.Join(src, modelfolder.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var text map[string]any
	if err := json.Unmarshal(b, &text); err != nil {
		t.Fatal(err)
	}
	if text["model_type"] != "gemma3_text" {
		t.Fatalf("%s: model_type %v, want gemma3_text", src, text["model_type"])
	}
	top := map[string]any{
		"architectures": []string{"Gemma3ForConditionalGeneration"}, "model_type": "gemma3",
		"boi_token_index": 255, "eoi_token_index": 256, "image_token_index": 257, "mm_tokens_per_image": 4,
		"initializer_range": 0.02, "transformers_version": "4.50.0.dev0",
		"vision_config": map[string]any{"model_type": "siglip_vision_model", "hidden_size": 8, "image_size": 4,
			"intermediate_size": 16, "num_attention_heads": 2, "num_hidden_layers": 1, "patch_size": 2, "vision_use_head": false},
	}
	for _, k := range []string{"eos_token_id", "torch_dtype"} {
		if v, ok := text[k]; ok {
			top[k] = v
			delete(text, k)
		}
	}
	delete(text, "architectures")
	top["text_config"] = text
	WriteJSON(t, filepath.Join(dir, modelfolder.ConfigFile), top)

	set, err := safetensors.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	var ts []safetensors.Tensor
	for _, name := range set.Names() {
		info, _ := set.Info(name)
		data, err := set.Bytes(name)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, safetensors.Tensor{Name: layout.Name(name), DType: info.DType, Shape: info.Shape, Data: data})
	}
	vision, projector := "vision_tower.", "multi_modal_projector."
	if strings.HasPrefix(layout.Model, "model.") {
		vision, projector = "model.vision_tower.", "model.multi_modal_projector."
	}
	for _, v := range []struct {
		name  string
		shape []int
	}{
		{vision + "vision_model.embeddings.patch_embedding.weight", []int{8, 3, 2, 2}},
		{vision + "vision_model.post_layernorm.weight", []int{8}},
		{projector + "mm_input_projection_weight", []int{8, 8}},
		{projector + "mm_soft_emb_norm.weight", []int{8}},
	} {
		n := 1
		for _, d := range v.shape {
			n *= d
		}
		vals := make([]float32, n)
		for i := range vals {
			vals[i] = float32(i%7) - 3
		}
		x, err := safetensors.FromFloat32Tensor(v.name, safetensors.BF16, v.shape, vals)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, x)
	}
	if err := safetensors.Write(filepath.Join(dir, "model.safetensors"), ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

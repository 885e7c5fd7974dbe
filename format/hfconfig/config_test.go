package hfconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestRealConfigs(t *testing.T) {
	type want struct {
		typ                          string
		vocab, hidden, inter, layers int
		heads, kv, headDim           int
		eps, theta                   float64
		rope                         RoPE
		maxPos                       int
		tie, qkvBias, oBias, qkNorm  bool
		bos                          int
		eos, stop                    []int
		qDim, kvDim                  int
		temperature                  float64
	}
	cases := map[string]want{
		"qwen2.5-0.5b-instruct": {
			typ: "qwen2", vocab: 151936, hidden: 896, inter: 4864, layers: 24, heads: 14, kv: 2, headDim: 64,
			eps: 1e-6, theta: 1e6, rope: RoPE{Type: "default", Theta: 1e6}, maxPos: 32768,
			tie: true, qkvBias: true, oBias: false, qkNorm: false,
			bos: 151643, eos: []int{151645}, stop: []int{151645, 151643}, qDim: 896, kvDim: 128, temperature: 0.7,
		},
		"qwen3-0.6b": {
			typ: "qwen3", vocab: 151936, hidden: 1024, inter: 3072, layers: 28, heads: 16, kv: 8, headDim: 128,
			eps: 1e-6, theta: 1e6, rope: RoPE{Type: "default", Theta: 1e6}, maxPos: 40960,
			tie: true, qkvBias: false, oBias: false, qkNorm: true,
			bos: 151643, eos: []int{151645}, stop: []int{151645, 151643}, qDim: 2048, kvDim: 1024, temperature: 0.6,
		},
		"qwen3-0.6b-transformers4.56": {
			typ: "qwen3", vocab: 151936, hidden: 1024, inter: 3072, layers: 28, heads: 16, kv: 8, headDim: 128,
			eps: 1e-6, theta: 1e6, rope: RoPE{Type: "default", Theta: 1e6}, maxPos: 40960,
			tie: true, qkvBias: false, oBias: false, qkNorm: true,
			bos: 151643, eos: []int{151645}, stop: []int{151645, 151643}, qDim: 2048, kvDim: 1024, temperature: 0.6,
		},
		"qwen3-1.7b": {
			typ: "qwen3", vocab: 151936, hidden: 2048, inter: 6144, layers: 28, heads: 16, kv: 8, headDim: 128,
			eps: 1e-6, theta: 1e6, rope: RoPE{Type: "default", Theta: 1e6}, maxPos: 40960,
			tie: true, qkvBias: false, oBias: false, qkNorm: true,
			bos: 151643, eos: []int{151645}, stop: []int{151645, 151643}, qDim: 2048, kvDim: 1024, temperature: 0.6,
		},
		"llama-3.2-1b-instruct": {
			typ: "llama", vocab: 128256, hidden: 2048, inter: 8192, layers: 16, heads: 32, kv: 8, headDim: 64,
			eps: 1e-5, theta: 500000,
			rope:   RoPE{Type: "llama3", Theta: 500000, Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192},
			maxPos: 131072, tie: true, qkvBias: false, oBias: false, qkNorm: false,
			bos: 128000, eos: []int{128001, 128008, 128009}, stop: []int{128001, 128008, 128009}, qDim: 2048, kvDim: 512, temperature: 0.6,
		},
	}
	for name, w := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := Load(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			got := []any{c.ModelType, c.VocabSize, c.HiddenSize, c.IntermediateSize, c.NumHiddenLayers,
				c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim, c.RMSNormEps, c.RoPE.Theta, c.RoPE,
				c.MaxPositionEmbeddings, c.TieWordEmbeddings, c.QKVBias, c.OBias, c.QKNorm, *c.BOSTokenID,
				fmt.Sprint(c.EOSTokenIDs), fmt.Sprint(c.StopTokenIDs()), c.QDim(), c.KVDim(), *c.Generation.Temperature,
				c.DType, c.HiddenAct}
			exp := []any{w.typ, w.vocab, w.hidden, w.inter, w.layers, w.heads, w.kv, w.headDim, w.eps, w.theta, w.rope,
				w.maxPos, w.tie, w.qkvBias, w.oBias, w.qkNorm, w.bos, fmt.Sprint(w.eos), fmt.Sprint(w.stop),
				w.qDim, w.kvDim, w.temperature, "bfloat16", "silu"}
			for i := range got {
				if got[i] != exp[i] {
					t.Errorf("field %d: got %v, want %v", i, got[i], exp[i])
				}
			}
			in, out, err := c.LinearDims("down_proj")
			if err != nil || in != w.inter || out != w.hidden {
				t.Errorf("down_proj dims %d→%d (%v)", in, out, err)
			}
			// Loading the config.json path directly finds the same folder.
			c2, err := Load(filepath.Join("testdata", name, ConfigName))
			if err != nil || c2.Generation == nil {
				t.Errorf("load by file: %v", err)
			}
		})
	}
}

// base is a minimal valid llama config that tests modify.
const base = `{"model_type":"llama","vocab_size":100,"hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4%s}`

func parseWith(extra string) (*Config, error) { return Parse([]byte(fmt.Sprintf(base, extra))) }

func TestDefaults(t *testing.T) {
	c, err := parseWith("")
	if err != nil {
		t.Fatal(err)
	}
	if c.NumKeyValueHeads != 4 || c.HeadDim != 16 || c.RMSNormEps != 1e-6 || c.RoPE != (RoPE{Type: "default", Theta: 10000}) ||
		c.MaxPositionEmbeddings != 2048 || c.TieWordEmbeddings || c.QKVBias || c.BOSTokenID != nil || c.EOSTokenIDs != nil {
		t.Errorf("defaults: %+v", c)
	}
	q3, err := Parse([]byte(strings.Replace(fmt.Sprintf(base, ""), `"llama"`, `"qwen3"`, 1)))
	if err != nil || q3.HeadDim != 128 || !q3.QKNorm || q3.MaxPositionEmbeddings != 32768 {
		t.Errorf("qwen3 defaults: %+v %v", q3, err)
	}
	q2, err := Parse([]byte(strings.Replace(fmt.Sprintf(base, `,"attention_bias":false`), `"llama"`, `"qwen2"`, 1)))
	if err != nil || !q2.QKVBias || q2.OBias || q2.HeadDim != 16 {
		t.Errorf("qwen2 ignores attention_bias: %+v %v", q2, err)
	}
	lb, err := parseWith(`,"attention_bias":true,"mlp_bias":true`)
	if err != nil || !lb.QKVBias || !lb.OBias || !lb.MLPBias || !lb.AttentionBias {
		t.Errorf("llama attention_bias: %+v %v", lb, err)
	}
	q3b, err := Parse([]byte(strings.Replace(fmt.Sprintf(base, `,"attention_bias":true`), `"llama"`, `"qwen3"`, 1)))
	if err != nil || !q3b.QKVBias || !q3b.OBias {
		t.Errorf("qwen3 attention_bias: %+v %v", q3b, err)
	}
}

func TestRoPESpellings(t *testing.T) {
	llama3 := RoPE{Type: "llama3", Theta: 500000, Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}
	cases := map[string]struct {
		extra string
		want  RoPE
	}{
		"legacy type key": {`,"rope_theta":500000,"rope_scaling":{"type":"llama3","factor":8,"low_freq_factor":1,"high_freq_factor":4,"original_max_position_embeddings":8192}`, llama3},
		"rope_parameters": {`,"rope_parameters":{"rope_type":"llama3","rope_theta":500000,"factor":8.0,"low_freq_factor":1.0,"high_freq_factor":4.0,"original_max_position_embeddings":8192}`, llama3},
		"both spellings":  {`,"rope_theta":500000,"rope_scaling":{"rope_type":"llama3","factor":8,"low_freq_factor":1,"high_freq_factor":4,"original_max_position_embeddings":8192},"rope_parameters":{"rope_type":"llama3","rope_theta":500000}`, llama3},
		"v5 default":      {`,"rope_parameters":{"rope_type":"default","rope_theta":1000000.0}`, RoPE{Type: "default", Theta: 1e6}},
		"no type v5":      {`,"rope_parameters":{"rope_theta":5000}`, RoPE{Type: "default", Theta: 5000}},
		"linear":          {`,"rope_scaling":{"type":"linear","factor":2}`, RoPE{Type: "linear", Theta: 10000, Factor: 2}},
		"dynamic":         {`,"rope_scaling":{"rope_type":"dynamic","factor":4}`, RoPE{Type: "dynamic", Theta: 10000, Factor: 4}},
		"null scaling":    {`,"rope_theta":1e6,"rope_scaling":null`, RoPE{Type: "default", Theta: 1e6}},
	}
	for name, c := range cases {
		cfg, err := parseWith(c.extra)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if cfg.RoPE != c.want {
			t.Errorf("%s: %+v, want %+v", name, cfg.RoPE, c.want)
		}
	}
}

func TestRejects(t *testing.T) {
	cases := map[string]struct {
		json string
		want string
	}{
		"model type":      {`{"model_type":"gpt2","vocab_size":1}`, "supported: llama, mistral, qwen2, qwen3"},
		"no model type":   {`{"vocab_size":1}`, "supported: llama, mistral, qwen2, qwen3"},
		"missing hidden":  {`{"model_type":"llama","vocab_size":1}`, "hidden_size: missing"},
		"zero layers":     {fmt.Sprintf(base, `,"num_hidden_layers":0`), "num_hidden_layers"},
		"layers huge":     {fmt.Sprintf(base, `,"num_hidden_layers":68719476736`), "num_hidden_layers 68719476736 is more than 65536"},
		"kv not dividing": {fmt.Sprintf(base, `,"num_key_value_heads":3`), "divide"},
		"odd head dim":    {fmt.Sprintf(base, `,"head_dim":15`), "even"},
		// heads × head_dim past 2^63 wrapped to 0: a q_proj of no rows.
		"q width overflows": {strings.Replace(fmt.Sprintf(base, `,"head_dim":8589934592`), `"num_attention_heads":4`, `"num_attention_heads":2147483648,"num_key_value_heads":1`, 1),
			"num_attention_heads 2147483648 is more than"},
		"q width huge": {strings.Replace(fmt.Sprintf(base, `,"head_dim":1099511627776,"num_key_value_heads":1`), `"num_attention_heads":4`, `"num_attention_heads":1`, 1),
			"num_attention_heads 1 × head_dim 1099511627776 is more than"},
		"hidden huge": {strings.Replace(fmt.Sprintf(base, ``), `"hidden_size":64`, `"hidden_size":4611686018427387904`, 1), "hidden_size 4611686018427387904 is more than"},
		"vocab huge":  {strings.Replace(fmt.Sprintf(base, ``), `"vocab_size":100`, `"vocab_size":4611686018427387904`, 1), "vocab_size 4611686018427387904 is more than"},
		// max_position_embeddings × factor past 2^63 made MaxModelLen negative.
		"scaled length huge": {fmt.Sprintf(base, `,"rope_scaling":{"type":"linear","factor":1e300}`), "max_position_embeddings 2048 × rope factor 1e+300"},
		"gelu":               {fmt.Sprintf(base, `,"hidden_act":"gelu"`), "hidden_act"},
		"eps zero":           {fmt.Sprintf(base, `,"rms_norm_eps":0`), "rms_norm_eps"},
		"theta negative":     {fmt.Sprintf(base, `,"rope_theta":-1`), "rope_theta"},
		"yarn":               {fmt.Sprintf(base, `,"rope_scaling":{"rope_type":"yarn","factor":4}`), `"yarn" is not supported (supported: default, linear, llama3)`},
		"llama3 partial":     {fmt.Sprintf(base, `,"rope_scaling":{"rope_type":"llama3","factor":8}`), "low_freq_factor"},
		"llama3 order":       {fmt.Sprintf(base, `,"rope_scaling":{"rope_type":"llama3","factor":8,"low_freq_factor":4,"high_freq_factor":1,"original_max_position_embeddings":8192}`), "low_freq_factor"},
		"llama3 orig frac":   {fmt.Sprintf(base, `,"rope_scaling":{"rope_type":"llama3","factor":8,"low_freq_factor":1,"high_freq_factor":4,"original_max_position_embeddings":81.5}`), "original_max_position_embeddings"},
		"factor below one":   {fmt.Sprintf(base, `,"rope_scaling":{"type":"linear","factor":0.5}`), "factor"},
		"scaling no type":    {fmt.Sprintf(base, `,"rope_scaling":{"factor":2}`), "neither rope_type"},
		"types disagree":     {fmt.Sprintf(base, `,"rope_scaling":{"type":"linear","factor":2},"rope_parameters":{"rope_type":"dynamic","factor":2}`), "says rope type"},
		"thetas disagree":    {fmt.Sprintf(base, `,"rope_theta":10000,"rope_parameters":{"rope_type":"default","rope_theta":500000}`), "disagree"},
		"eos string":         {fmt.Sprintf(base, `,"eos_token_id":"2"`), "eos_token_id"},
		"eos past vocab":     {fmt.Sprintf(base, `,"eos_token_id":[1,100]`), "outside the vocabulary"},
		"bos list":           {fmt.Sprintf(base, `,"bos_token_id":[1,2]`), "want one id"},
		"wrong type":         {fmt.Sprintf(base, `,"tie_word_embeddings":"yes"`), "tie_word_embeddings"},
		"sliding no size":    {strings.Replace(fmt.Sprintf(base, `,"use_sliding_window":true,"sliding_window":null`), `"llama"`, `"qwen2"`, 1), "sliding_window"},
		"not json":           {`{"model_type":`, "hfconfig"},
		"partial rotary":     {fmt.Sprintf(base, `,"partial_rotary_factor":0.5`), "partial_rotary_factor 0.5 is not supported"},
		"partial in params":  {fmt.Sprintf(base, `,"rope_parameters":{"rope_type":"default","partial_rotary_factor":0.25}`), "rope_parameters.partial_rotary_factor 0.25"},
	}
	for name, c := range cases {
		_, err := Parse([]byte(c.json))
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not mention %q", name, err, c.want)
		}
	}
}

func TestLoadErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("missing config: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ConfigName), []byte(fmt.Sprintf(base, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(dir)
	if err != nil || c.Generation != nil {
		t.Fatalf("no generation config: %v %+v", err, c)
	}
	for body, want := range map[string]string{
		`{"eos_token_id":[1,"x"]}`: "eos_token_id",
		`{"eos_token_id":[100]}`:   "outside the vocabulary",
		`{"top_p":0}`:              "top_p",
		`{"temperature":-1}`:       "temperature",
		`{"pad_token_id":[1,2]}`:   "pad_token_id",
		`[`:                        "generation",
	} {
		if err := os.WriteFile(filepath.Join(dir, GenerationConfigName), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(dir)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), GenerationConfigName) {
			t.Errorf("%s: %v", body, err)
		}
	}
}

// The early LLaMA conversions (decapoda-research's) and their fine-tunes
// say "no pad token" as pad_token_id -1, in config.json and generation_config.json;
// transformers and vLLM load them, and so does Load, with no pad id.
func TestNegativePadIsNoPad(t *testing.T) {
	dir := t.TempDir()
	llama := strings.Replace(fmt.Sprintf(base, `,"bos_token_id":0,"eos_token_id":1`), `"num_hidden_layers":2`, `"num_hidden_layers":2,"pad_token_id":-1`, 1)
	if err := os.WriteFile(filepath.Join(dir, ConfigName), []byte(llama), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, GenerationConfigName), []byte(`{"bos_token_id":0,"eos_token_id":1,"pad_token_id":-1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.PadTokenID != nil || c.Generation.PadTokenID != nil || fmt.Sprint(c.StopTokenIDs()) != "[1]" || *c.BOSTokenID != 0 {
		t.Errorf("pad %v, generation pad %v, stops %v", c.PadTokenID, c.Generation.PadTokenID, c.StopTokenIDs())
	}
	// The ids that matter stay strict.
	if _, err := Parse([]byte(fmt.Sprintf(base, `,"eos_token_id":-1`))); err == nil || !strings.Contains(err.Error(), "eos_token_id") {
		t.Errorf("eos -1: %v", err)
	}
}

func TestLinearDimsUnknown(t *testing.T) {
	c, err := parseWith("")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.LinearDims("lm_head"); err == nil {
		t.Error("lm_head accepted")
	}
}

// gemma3_1b is shaped like the config.json of google/gemma-3-1b-it
// (transformers 4.50): sliding_window_pattern rather than layer_types.
const gemma3_1b = `{"architectures":["Gemma3ForCausalLM"],"attention_bias":false,"attention_dropout":0.0,
"attn_logit_softcapping":null,"bos_token_id":2,"cache_implementation":"hybrid","eos_token_id":[1,106],
"final_logit_softcapping":null,"head_dim":256,"hidden_activation":"gelu_pytorch_tanh","hidden_size":1152,
"initializer_range":0.02,"intermediate_size":6912,"max_position_embeddings":32768,"model_type":"gemma3_text",
"num_attention_heads":4,"num_hidden_layers":26,"num_key_value_heads":1,"pad_token_id":0,
"query_pre_attn_scalar":256,"rms_norm_eps":1e-06,"rope_local_base_freq":10000,"rope_scaling":null,
"rope_theta":1000000,"sliding_window":512,"sliding_window_pattern":6,"torch_dtype":"bfloat16",
"use_cache":true,"vocab_size":262144}`

func TestGemma3(t *testing.T) {
	c, err := Parse([]byte(gemma3_1b))
	if err != nil {
		t.Fatal(err)
	}
	var full []int
	for i, lt := range c.LayerTypes {
		if lt == "full_attention" {
			full = append(full, i)
		}
	}
	got := fmt.Sprint(c.HeadDim, c.HiddenAct, c.SlidingWindow, c.LocalRoPETheta, c.RoPE, c.QueryPreAttnScalar,
		c.TieWordEmbeddings, c.QKNorm, c.SandwichNorms, c.QKVBias, c.OBias, c.MaxPositionEmbeddings, c.EOSTokenIDs, len(c.LayerTypes), full)
	want := fmt.Sprint(256, "gelu_pytorch_tanh", 512, 10000.0, RoPE{Type: "default", Theta: 1e6}, 256.0,
		true, true, true, false, false, 32768, []int{1, 106}, 26, []int{5, 11, 17, 23})
	if got != want {
		t.Errorf("gemma-3-1b:\n got %s\nwant %s", got, want)
	}

	// Gemma3TextConfig's defaults for what a config leaves out (4 key/value
	// heads whatever the query heads).
	d, err := Parse([]byte(`{"model_type":"gemma3_text","vocab_size":10,"hidden_size":8,"intermediate_size":16,
		"num_hidden_layers":7,"num_attention_heads":8,"tie_word_embeddings":null}`))
	if err != nil {
		t.Fatal(err)
	}
	got = fmt.Sprint(d.HeadDim, d.SlidingWindow, d.LocalRoPETheta, d.RoPE.Theta, d.QueryPreAttnScalar, d.TieWordEmbeddings,
		d.MaxPositionEmbeddings, d.LayerTypes[4], d.LayerTypes[5], d.LayerTypes[6], d.NumKeyValueHeads)
	want = fmt.Sprint(256, 4096, 10000.0, 1e6, 256.0, true, 131072, "sliding_attention", "full_attention", "sliding_attention", 4)
	if got != want {
		t.Errorf("gemma3_text defaults:\n got %s\nwant %s", got, want)
	}

	// layer_types wins over any pattern; per-layer-type rope_parameters (newer transformers).
	e, err := Parse([]byte(`{"model_type":"gemma3_text","vocab_size":10,"hidden_size":8,"intermediate_size":16,
		"num_hidden_layers":2,"num_attention_heads":2,"num_key_value_heads":2,"head_dim":4,"sliding_window_pattern":1,
		"layer_types":["full_attention","sliding_attention"],
		"rope_parameters":{"full_attention":{"rope_type":"linear","factor":8,"rope_theta":500000},
		"sliding_attention":{"rope_type":"default","rope_theta":20000}}}`))
	if err != nil {
		t.Fatal(err)
	}
	got = fmt.Sprint(e.LayerTypes, e.RoPE, e.LocalRoPETheta)
	want = fmt.Sprint([]string{"full_attention", "sliding_attention"}, RoPE{Type: "linear", Theta: 500000, Factor: 8}, 20000.0)
	if got != want {
		t.Errorf("gemma3_text layer_types and rope_parameters:\n got %s\nwant %s", got, want)
	}
}

func TestGemma3Rejects(t *testing.T) {
	g := func(extra string) string {
		return `{"model_type":"gemma3_text","vocab_size":10,"hidden_size":8,"intermediate_size":16,
		"num_hidden_layers":2,"num_attention_heads":2,"num_key_value_heads":1,"head_dim":4` + extra + `}`
	}
	cases := map[string]struct{ json, want string }{
		"final softcap":    {g(`,"final_logit_softcapping":30.0`), "final_logit_softcapping 30.0 is not supported"},
		"attn softcap":     {g(`,"attn_logit_softcapping":50`), "attn_logit_softcapping 50 is not supported"},
		"bidirectional":    {g(`,"use_bidirectional_attention":true`), "use_bidirectional_attention"},
		"dropout":          {g(`,"attention_dropout":0.1`), "attention_dropout 0.1 is not supported"},
		"layer types len":  {g(`,"layer_types":["full_attention"]`), "layer_types has 1 entries, num_hidden_layers is 2"},
		"layer type name":  {g(`,"layer_types":["full_attention","chunked_attention"]`), `layer_types[1] "chunked_attention"`},
		"pattern zero":     {g(`,"sliding_window_pattern":0`), "sliding_window_pattern 0"},
		"window null":      {g(`,"sliding_window":null`), "sliding_window null must be a positive number"},
		"window zero":      {g(`,"sliding_window":0`), "sliding_window 0"},
		"activation":       {g(`,"hidden_activation":"gelu"`), `hidden_activation "gelu"`},
		"scalar":           {g(`,"query_pre_attn_scalar":0`), "query_pre_attn_scalar 0"},
		"local base":       {g(`,"rope_local_base_freq":-1`), "rope_local_base_freq -1"},
		"local yarn":       {g(`,"rope_parameters":{"sliding_attention":{"rope_type":"linear","factor":2}}`), "rope_parameters.sliding_attention"},
		"multimodal llama": {`{"model_type":"gemma3","text_config":{"model_type":"llama"}}`, `text_config.model_type "llama": want "gemma3_text"`},
		"multimodal none":  {`{"model_type":"gemma3"}`, "text_config: missing"},
		"multimodal list":  {`{"model_type":"gemma3","text_config":[1]}`, "text_config: want an object"},
		"multimodal inner": {`{"model_type":"gemma3","text_config":{"attention_dropout":0.5}}`, "attention_dropout 0.5 is not supported (Hone trains without dropout; Gemma 3 checkpoints write 0.0) (in text_config)"},
		"layers huge":      {strings.Replace(g(""), `"num_hidden_layers":2`, `"num_hidden_layers":100000000`, 1), "num_hidden_layers 100000000 is more than"},
	}
	for name, c := range cases {
		_, err := Parse([]byte(c.json))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, c.want)
		}
	}
}

// TestMistral: Mistral 7B's config.json reads as a Llama-shaped decoder
// without biases whose every layer attends through sliding_window keys:
// v0.1's 4096, none for v0.2's null, MistralConfig's 4096 when the key is
// absent; a window that is not a positive number is refused by name.
func TestMistral(t *testing.T) {
	for _, c := range []struct {
		dir    string
		window int
		theta  float64
	}{{"mistral-7b-instruct-v0.1", 4096, 10000}, {"mistral-7b-instruct-v0.2", 0, 1e6}} {
		cfg, err := Load(filepath.Join("testdata", c.dir))
		if err != nil {
			t.Fatal(err)
		}
		got := []any{cfg.ModelType, cfg.VocabSize, cfg.HeadDim, cfg.NumKeyValueHeads, cfg.SlidingWindow, cfg.RoPE.Theta,
			cfg.MaxPositionEmbeddings, cfg.TieWordEmbeddings, cfg.QKVBias, cfg.OBias, cfg.QKNorm, fmt.Sprint(cfg.StopTokenIDs())}
		want := []any{"mistral", 32000, 128, 8, c.window, c.theta, 32768, false, false, false, false, "[2]"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: got %v, want %v", c.dir, got, want)
		}
	}
	mistral := func(extra string) (*Config, error) {
		return Parse([]byte(strings.Replace(fmt.Sprintf(base, extra), `"llama"`, `"mistral"`, 1)))
	}
	if c, err := mistral(""); err != nil || c.SlidingWindow != 4096 || c.MaxPositionEmbeddings != 131072 || c.HeadDim != 16 {
		t.Errorf("mistral defaults: %+v %v", c, err)
	}
	if c, err := mistral(`,"attention_bias":true`); err != nil || c.QKVBias || c.OBias || !slices.Contains(c.UnknownFields, "attention_bias") {
		t.Errorf("mistral with attention_bias (MistralAttention has no biases, whatever the key says): %+v %v", c, err)
	}
	for _, bad := range []string{`,"sliding_window":0`, `,"sliding_window":-1`, `,"sliding_window":"4096"`} {
		if _, err := mistral(bad); err == nil || !strings.Contains(err.Error(), "sliding_window") {
			t.Errorf("mistral %s: %v, want an error naming sliding_window", bad, err)
		}
	}
}

// TestLoadHugeFiles: a config.json or generation_config.json of a
// gigabyte is refused by its size, naming the file, not read whole first.
func TestLoadHugeFiles(t *testing.T) {
	for _, name := range []string{ConfigName, GenerationConfigName} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ConfigName), []byte(fmt.Sprintf(base, "")), 0o644); err != nil {
			t.Fatal(err)
		}
		if name == GenerationConfigName {
			if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Truncate(filepath.Join(dir, name), 1<<30); err != nil { // sparse: no disk used
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Load(dir)
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "1073741824 bytes") {
			t.Errorf("%s: error %v does not name the file and its size", name, err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 1<<26 {
			t.Errorf("%s: allocated %d bytes to refuse it", name, got)
		}
	}
}

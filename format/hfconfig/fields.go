package hfconfig

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// Use says what Hone does with a config.json key.
type Use uint8

const (
	// Honoured keys are read into Config and change what is built.
	Honoured Use = iota + 1
	// Refused keys are accepted only at the value Hone implements (the one
	// every released checkpoint of the family writes); any other value is an
	// error naming the key and the value.
	Refused
	// Ignored keys are knowingly left unread: metadata, or settings that do
	// not change the math of a forward or backward pass (Note says why).
	Ignored
)

func (u Use) String() string {
	switch u {
	case Honoured:
		return "honoured"
	case Refused:
		return "refused unless at its implemented value"
	case Ignored:
		return "ignored"
	}
	return fmt.Sprintf("Use(%d)", uint8(u))
}

// Field is one config.json key of a family: what Hone does with it, and why.
type Field struct {
	Use  Use
	Note string
	// check refuses a value Hone does not implement (Refused keys only).
	check func(key string, v json.RawMessage) error
}

// Fields returns the table of the config.json keys that model_type
// modelType's configuration class reads (transformers' LlamaConfig,
// MistralConfig, Qwen2Config, Qwen3Config, Gemma3TextConfig, Gemma3Config) together with
// PretrainedConfig's common keys, each honoured, refused unless at its
// implemented value, or knowingly ignored. nil for a model_type Hone does
// not read. Parse records a key outside the table in
// Config.UnknownFields rather than failing: PretrainedConfig keeps any key
// it is given, and fine-tuning tools add their own (the model folder's
// opener logs them).
func Fields(modelType string) map[string]Field {
	t := commonFields()
	switch modelType {
	case "llama":
		maps.Copy(t, decoderFields())
		t["hidden_act"] = Field{Use: Honoured, Note: "the MLP activation; only silu (every Llama checkpoint) is accepted"}
		t["attention_bias"] = Field{Use: Honoured, Note: "q/k/v/o projections carry biases"}
		t["mlp_bias"] = Field{Use: Honoured, Note: "gate/up/down projections carry biases"}
		t["pretraining_tp"] = Field{Use: Ignored, Note: "older LlamaForCausalLM split the projections into this many slices and summed them: the same product"}
	case "mistral":
		maps.Copy(t, decoderFields())
		t["hidden_act"] = Field{Use: Honoured, Note: "the MLP activation; only silu (every Mistral checkpoint) is accepted"}
		t["sliding_window"] = Field{Use: Honoured, Note: "the attention window of every layer; null: full attention; absent: MistralConfig's 4096"}
	case "qwen2", "qwen3":
		maps.Copy(t, decoderFields())
		t["hidden_act"] = Field{Use: Honoured, Note: "the MLP activation; only silu (every Qwen checkpoint) is accepted"}
		t["use_sliding_window"] = Field{Use: Honoured, Note: "true with layers at or past max_window_layers is refused: windowed attention is implemented for gemma3_text only"}
		t["sliding_window"] = Field{Use: Honoured, Note: "the window when use_sliding_window is true (recorded in Config.SlidingWindow)"}
		t["max_window_layers"] = Field{Use: Honoured, Note: "the first layer that would slide when use_sliding_window is true"}
		t["layer_types"] = Field{Use: Honoured, Note: "newer transformers write it; every entry must be full_attention"}
		if modelType == "qwen2" {
			t["attention_bias"] = Field{Use: Ignored, Note: "Qwen2Attention hard-codes biases on q/k/v and none on o, whatever the key says"}
		} else {
			t["attention_bias"] = Field{Use: Honoured, Note: "q/k/v/o projections carry biases"}
		}
	case "gemma3_text":
		maps.Copy(t, decoderFields())
		maps.Copy(t, gemma3TextFields())
	case "gemma3":
		t["text_config"] = Field{Use: Honoured, Note: "the language model, read as a gemma3_text config (its own keys checked against that table)"}
		t["vision_config"] = Field{Use: Ignored, Note: "the SigLIP vision tower, not loaded: Hone trains and serves the text model only"}
		for _, k := range []string{"boi_token_index", "eoi_token_index", "image_token_index", "mm_tokens_per_image"} {
			t[k] = Field{Use: Ignored, Note: "image tokens of the vision path, which is not loaded"}
		}
		t["initializer_range"] = Field{Use: Ignored, Note: "weight initialisation; a loaded checkpoint has its weights"}
		t["tie_word_embeddings"] = Field{Use: Honoured, Note: "must agree with text_config's, which transformers ties lm_head by"}
	default:
		return nil
	}
	return t
}

// commonFields are PretrainedConfig's keys, which every family's file may
// carry.
func commonFields() map[string]Field {
	t := map[string]Field{
		"model_type":    {Use: Honoured, Note: "selects the family"},
		"architectures": {Use: Honoured, Note: "recorded in Config.Architectures; the model class follows model_type"},
		"bos_token_id":  {Use: Honoured, Note: "checked inside the vocabulary"},
		"eos_token_id":  {Use: Honoured, Note: "the stop ids when generation_config.json gives none"},
		"pad_token_id":  {Use: Honoured, Note: "checked inside the vocabulary; a negative id (early LLaMA conversions write -1) is no pad token"},
		"torch_dtype":   {Use: Ignored, Note: "recorded in Config.DType; each tensor is read at the dtype its safetensors header gives, and --dtype picks the in-memory format"},
		"dtype":         {Use: Ignored, Note: "torch_dtype's newer spelling"},

		"transformers_version":         {Use: Ignored, Note: "metadata"},
		"_name_or_path":                {Use: Ignored, Note: "metadata"},
		"unsloth_version":              {Use: Ignored, Note: "metadata written by Unsloth"},
		"unsloth_fixed":                {Use: Ignored, Note: "metadata written by Unsloth"},
		"use_cache":                    {Use: Ignored, Note: "whether transformers keeps a KV cache; Hone's serve always does, training never needs one"},
		"_attn_implementation_autoset": {Use: Ignored, Note: "which attention kernel transformers picked: the same math"},
		"attn_implementation":          {Use: Ignored, Note: "which attention kernel transformers uses: the same math"},
		"return_dict":                  {Use: Ignored, Note: "the shape of transformers' Python return values"},
		"output_attentions":            {Use: Ignored, Note: "the shape of transformers' Python return values"},
		"output_hidden_states":         {Use: Ignored, Note: "the shape of transformers' Python return values"},
		"torchscript":                  {Use: Ignored, Note: "a transformers export switch"},
		"use_bfloat16":                 {Use: Ignored, Note: "a TensorFlow/Flax switch of old files"},
		"tie_encoder_decoder":          {Use: Ignored, Note: "encoder-decoder models only"},
		"chunk_size_feed_forward":      {Use: Ignored, Note: "computing the MLP in chunks gives the same values"},
		"id2label":                     {Use: Ignored, Note: "labels of classification heads, which Hone does not build"},
		"label2id":                     {Use: Ignored, Note: "labels of classification heads, which Hone does not build"},
		"num_labels":                   {Use: Ignored, Note: "classification heads, which Hone does not build"},
		"problem_type":                 {Use: Ignored, Note: "classification heads, which Hone does not build"},
		"finetuning_task":              {Use: Ignored, Note: "metadata"},
		"tokenizer_class":              {Use: Ignored, Note: "tokenizer.json is read instead"},
		"prefix":                       {Use: Ignored, Note: "a prompt prefix of old seq2seq pipelines"},
		"task_specific_params":         {Use: Ignored, Note: "pipeline defaults"},
		"sep_token_id":                 {Use: Ignored, Note: "not a decoder-only token"},
		"decoder_start_token_id":       {Use: Ignored, Note: "encoder-decoder models only"},
		"cross_attention_hidden_size":  {Use: Ignored, Note: "encoder-decoder models only"},
		"is_decoder":                   {Use: Ignored, Note: "decoder-only models are decoders"},

		"quantization_config": {Use: Refused, Note: "quantized checkpoints are not supported (float weights only)",
			check: refuseUnlessNull("quantized checkpoints are not supported (Hone reads float weights only)")},
		"is_encoder_decoder": {Use: Refused, Note: "must be false", check: refuseUnless("false", "Hone runs decoder-only models")},
		"add_cross_attention": {Use: Refused, Note: "must be false",
			check: refuseUnless("false", "Hone runs decoder-only models without cross-attention")},
		"pruned_heads": {Use: Refused, Note: "must be empty", check: refuseUnless("{}", "pruned attention heads are not supported")},
	}
	// Sampling defaults that old transformers versions wrote into config.json.
	for _, k := range []string{"max_length", "min_length", "do_sample", "early_stopping", "num_beams", "num_beam_groups",
		"diversity_penalty", "temperature", "top_k", "top_p", "typical_p", "repetition_penalty", "length_penalty",
		"no_repeat_ngram_size", "encoder_no_repeat_ngram_size", "bad_words_ids", "num_return_sequences",
		"output_scores", "return_dict_in_generate", "forced_bos_token_id", "forced_eos_token_id",
		"remove_invalid_values", "exponential_decay_length_penalty", "suppress_tokens", "begin_suppress_tokens"} {
		t[k] = Field{Use: Ignored, Note: "a sampling default of old files; sampling comes from the request and generation_config.json"}
	}
	return t
}

// decoderFields are the keys the text decoders share.
func decoderFields() map[string]Field {
	return map[string]Field{
		"vocab_size":              {Use: Honoured, Note: "V"},
		"hidden_size":             {Use: Honoured, Note: "C"},
		"intermediate_size":       {Use: Honoured, Note: "the MLP width"},
		"num_hidden_layers":       {Use: Honoured, Note: "layers"},
		"num_attention_heads":     {Use: Honoured, Note: "H"},
		"num_key_value_heads":     {Use: Honoured, Note: "KVH (grouped-query attention)"},
		"head_dim":                {Use: Honoured, Note: "D, when it is not hidden_size/heads"},
		"rms_norm_eps":            {Use: Honoured, Note: "the RMSNorm epsilon"},
		"rope_theta":              {Use: Honoured, Note: "the RoPE base"},
		"rope_scaling":            {Use: Honoured, Note: "default, linear and llama3 honoured (dynamic refused by train/model, others here)"},
		"rope_parameters":         {Use: Honoured, Note: "rope_theta and rope_scaling in transformers 5's spelling"},
		"max_position_embeddings": {Use: Honoured, Note: "the longest context serve accepts"},
		"tie_word_embeddings":     {Use: Honoured, Note: "lm_head reuses embed_tokens"},
		// transformers' RoPE reads it for any model (rotating that fraction
		// of a head's dimensions); taken as absent it would be rotated whole.
		"partial_rotary_factor": {Use: Refused, Note: "must be 1 (every dimension of a head rotated)",
			check: refuseUnless("1", "Hone rotates every dimension of a head")},
		"initializer_range": {Use: Ignored, Note: "weight initialisation; a loaded checkpoint has its weights"},
		"attention_dropout": {Use: Refused, Note: "must be 0 (Hone trains without dropout; every released checkpoint writes 0.0)",
			check: refuseNonzero("Hone trains without dropout")},
	}
}

// gemma3TextFields are the keys only Gemma3TextConfig reads.
func gemma3TextFields() map[string]Field {
	return map[string]Field{
		"hidden_activation":      {Use: Honoured, Note: "the MLP activation; only gelu_pytorch_tanh"},
		"attention_bias":         {Use: Honoured, Note: "q/k/v/o projections carry biases"},
		"query_pre_attn_scalar":  {Use: Honoured, Note: "scores are scaled by its inverse square root"},
		"sliding_window":         {Use: Honoured, Note: "the window of the sliding layers"},
		"layer_types":            {Use: Honoured, Note: "sliding_attention or full_attention per layer"},
		"sliding_window_pattern": {Use: Honoured, Note: "every n-th layer full when layer_types is absent"},
		"_sliding_window_pattern": {Use: Ignored,
			Note: "the pattern as newer transformers store it beside layer_types, which is read instead"},
		"rope_local_base_freq": {Use: Honoured, Note: "the RoPE base of the sliding layers"},
		"cache_implementation": {Use: Ignored, Note: "transformers' KV cache class; Hone's cache keeps each layer's window itself"},
		"final_logit_softcapping": {Use: Refused, Note: "must be null (soft-capping is not implemented)",
			check: refuseUnlessNull("Gemma 3 checkpoints write null; soft-capping is not implemented")},
		"attn_logit_softcapping": {Use: Refused, Note: "must be null (soft-capping is not implemented)",
			check: refuseUnlessNull("Gemma 3 checkpoints write null; soft-capping is not implemented")},
		"use_bidirectional_attention": {Use: Refused, Note: "must be false",
			check: refuseUnless("false", "Hone runs causal decoders only")},
		"attention_dropout": {Use: Refused, Note: "must be 0 (Hone trains without dropout; Gemma 3 checkpoints write 0.0)",
			check: refuseNonzero("Hone trains without dropout; Gemma 3 checkpoints write 0.0")},
	}
}

// refuseUnlessNull accepts only null.
func refuseUnlessNull(why string) func(string, json.RawMessage) error {
	return func(key string, v json.RawMessage) error {
		if string(v) == "null" {
			return nil
		}
		return fmt.Errorf("hfconfig: %s %s is not supported (%s)", key, v, why)
	}
}

// refuseUnless accepts null and the JSON value ok (compared after decoding).
func refuseUnless(ok, why string) func(string, json.RawMessage) error {
	return func(key string, v json.RawMessage) error {
		var got, want any
		if string(v) == "null" || json.Unmarshal(v, &got) == nil && json.Unmarshal([]byte(ok), &want) == nil && fmt.Sprint(got) == fmt.Sprint(want) {
			return nil
		}
		return fmt.Errorf("hfconfig: %s %s is not supported (%s)", key, v, why)
	}
}

// refuseNonzero accepts a number equal to 0 (or null).
func refuseNonzero(why string) func(string, json.RawMessage) error {
	return func(key string, v json.RawMessage) error {
		var p float64
		if string(v) == "null" || json.Unmarshal(v, &p) == nil && p == 0 {
			return nil
		}
		return fmt.Errorf("hfconfig: %s %s is not supported (%s)", key, v, why)
	}
}

// checkFields refuses the keys of keys whose value the family's table
// refuses, in key order, and returns the keys outside the table, sorted.
func checkFields(modelType string, keys map[string]json.RawMessage) (unknown []string, err error) {
	t := Fields(modelType)
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		f, ok := t[k]
		switch {
		case !ok:
			unknown = append(unknown, k)
		case f.check != nil:
			if err := f.check(k, keys[k]); err != nil {
				return nil, err
			}
		}
	}
	return unknown, nil
}

// Package hfconfig reads a Hugging Face model's config.json and generation_config.json
// for the model families Hone implements (model_type llama, mistral, qwen2, qwen3, gemma3_text)
// into one validated Config.
//
// It owns the meaning of the fields, not the model math: defaults that transformers
// applies when a key is absent (num_key_value_heads = heads, head_dim = hidden/heads —
// except Qwen3, whose class default is 128), which projections carry a bias in each
// family (Qwen2: q, k and v always, o never; Llama and Qwen3: all four when
// attention_bias is true), both RoPE spellings (legacy rope_theta + rope_scaling with
// "type" or "rope_type", and the newer rope_parameters object), and token ids given as
// an int, a list or null. Anything a model built from the Config could get silently
// wrong — an unknown model_type, an unknown RoPE type, an activation other than silu,
// heads that do not divide, a size or heads × head_dim past 2^24, a context length
// past 2^31 once scaled — is an error naming the field.
//
// gemma3_text follows Gemma3TextConfig (transformers' configuration_gemma3.py):
// hidden_activation (only gelu_pytorch_tanh), head_dim 256, rope_theta 1e6 and tied
// embeddings by default; layer_types, else sliding_window_pattern (default 6); sliding_window
// (default 4096); rope_local_base_freq (default 10000) or per-layer-type rope_parameters;
// query_pre_attn_scalar (default 256). attn_logit_softcapping and final_logit_softcapping
// other than null, attention_dropout other than 0 and use_bidirectional_attention true are
// refused. Sizes the file leaves out take Gemma3TextConfig's defaults (vocab_size 262208,
// hidden_size 2304, num_attention_heads 8, num_key_value_heads 4, …; pad, eos and bos ids
// 0, 1 and 2).
//
// The multimodal model_type gemma3 (Gemma3ForConditionalGeneration, gemma-3-4b-it and
// up) is read as its language model: text_config parsed as gemma3_text, the top level's
// token ids and dtype taking precedence, Config.Wrapper "gemma3"; vision_config and the
// image-token keys are knowingly ignored (Hone trains and serves the text model only).
//
// Fields is the table, one per family, of every key the family's
// configuration class and PretrainedConfig read, each honoured, refused
// unless at the value Hone implements, or knowingly ignored with the reason.
// Refused unless at Hone's value: quantization_config, an encoder-decoder or
// cross-attention switch, pruned heads, the Gemma keys above,
// partial_rotary_factor other than 1 (at the top level or in
// rope_parameters: transformers rotates only that fraction of a head), and
// attention_dropout other than 0. Hone trains without dropout, as every
// released Llama, Qwen and Gemma checkpoint asks (0.0) and as ART's Unsloth
// training runs them; a nonzero value is refused rather than ignored, since
// training would silently differ from what the file asks. Knowingly
// ignored: metadata such as transformers_version, use_cache,
// initializer_range, and Llama's pretraining_tp, which only splits the same
// product. Qwen2 and Qwen3's sliding window is honoured by refusal:
// use_sliding_window true is accepted only when max_window_layers leaves no
// layer sliding, and layer_types must be full_attention throughout. A key
// outside the table is not an error (PretrainedConfig keeps any key, and
// tools add their own) but is listed in Config.UnknownFields, which the
// model folder's opener logs.
package hfconfig

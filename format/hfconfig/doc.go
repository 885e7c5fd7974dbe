// Package hfconfig reads a Hugging Face model's config.json and generation_config.json
// for the model families Hone implements (model_type llama, qwen2, qwen3) into one
// validated Config.
//
// It owns the meaning of the fields, not the model math: defaults that transformers
// applies when a key is absent (num_key_value_heads = heads, head_dim = hidden/heads —
// except Qwen3, whose class default is 128), which projections carry a bias in each
// family (Qwen2: q, k and v always, o never; Llama and Qwen3: all four when
// attention_bias is true), both RoPE spellings (legacy rope_theta + rope_scaling with
// "type" or "rope_type", and the newer rope_parameters object), and token ids given as
// an int, a list or null. Anything a model built from the Config could get silently
// wrong — an unknown model_type, an unknown RoPE type, an activation other than silu,
// heads that do not divide — is an error naming the field.
package hfconfig

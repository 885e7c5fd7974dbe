// Package tinymodel writes small randomly initialised model folders in the
// Hugging Face layout — config.json, model.safetensors, a byte-level
// tokenizer.json and a tokenizer_config.json with a ChatML chat template — for
// tests and the demo pipeline (no registry here ships real weights).
//
// The vocabulary is the 256 byte tokens (ids 0–255, in byte order, spelled
// with GPT-2's byte-to-unicode map), then the special tokens <|endoftext|>,
// <|im_start|>, <|im_end|> (256, 257, 258); a larger vocab_size leaves the
// extra embedding rows without a token, as Qwen's padded vocabularies do. The
// weights are drawn from a seeded source: the same Options give the same bytes.
//
// Families are llama, mistral (sliding_window null: full attention), qwen2, qwen3
// and gemma3_text. A gemma3_text folder is
// written as Gemma3TextConfig reads it (hidden_activation, head_dim,
// query_pre_attn_scalar = head_dim, rope_local_base_freq 10000): its layers
// alternate sliding (Options.SlidingWindow) and full attention
// (sliding_window_pattern 2, and the same layer_types), and its norm weights
// start at 0, the identity of Gemma's (1+w) norm. The tokenizer and the
// ChatML template are the same for every family.
package tinymodel

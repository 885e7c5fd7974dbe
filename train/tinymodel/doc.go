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
package tinymodel

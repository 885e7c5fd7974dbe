// Package modelfolder opens a Hugging Face model folder — config.json (with
// generation_config.json when present) and its safetensors weights, single file or
// sharded — and checks that the weights are the ones the config describes.
//
// It owns the per-family list of checkpoint tensor names and shapes (Expected):
// embed_tokens, per layer the norms, q/k/v/o projections (plus q/k/v biases for
// Qwen2, q_norm/k_norm for Qwen3, biases wherever attention_bias or mlp_bias say so),
// gate/up/down, the final norm, and lm_head unless the embeddings are tied. A model
// loader can bind weights by these names knowing each one exists with its shape.
package modelfolder

// Package modelfolder is the one opener of a Hugging Face model folder, for
// every stage: config.json (with generation_config.json when present), the
// safetensors weights (single file or sharded) checked against the config,
// tokenizer.json, the chat template of tokenizer_config.json, and the ids
// that end a turn. serve, train and hone-inspect open folders only through
// Open (contracts_modelfolder_test.go pins that), so they cannot disagree
// about what a folder says.
//
// Which tokens end a turn is StopTokens: the eos ids transformers' generate
// stops on (generation_config.json's, else config.json's) and the
// tokenizer's eos_token, as vLLM serves a folder. serve stops generating on
// them; layout ends a trained turn at them.
//
// It owns the per-family list of checkpoint tensor names and shapes (Expected):
// embed_tokens, per layer the norms, q/k/v/o projections (plus q/k/v biases for
// Qwen2, q_norm/k_norm for Qwen3, biases wherever attention_bias or mlp_bias say so),
// gate/up/down, the final norm, and lm_head unless the embeddings are tied. A model
// loader can bind weights by these names knowing each one exists with its shape.
//
// A multimodal Gemma 3 checkpoint (config.json model_type gemma3) names those tensors
// after its language model, language_model.model.… as the hub files do, or
// model.language_model.… as transformers 4.52 and later name the modules (Layouts);
// Open finds which, TextWeights reads them under the names Expected lists, and the
// vision tower's and projector's tensors are left aside, which Notes says.
package modelfolder

// Package model is Hone's transformer: the Llama, Mistral, Qwen2, Qwen3 and
// Gemma 3 (text, gemma3_text) decoder families as one set of structs (Model → Block → Attention, MLP → Linear),
// each with a Forward and a Backward that mirrors it, plus LoRA adapters.
//
// What it owns:
//
//   - loading a Hugging Face model folder (config.json + safetensors, single
//     file or sharded, any of f32/f16/bf16 on disk, kept as float32 in memory,
//     or as bfloat16 with LoadBF16 / Model.ToBF16) into a Model; SaveWeights writes the
//     weights back (after Merge: a merged checkpoint);
//   - the training pass: a full-sequence forward over packed sequences that
//     returns per-token log-probabilities of given targets and the entropy
//     (through the backend's chunked lm_head kernel, never a [N, V] logits
//     tensor), and a backward that produces gradients of the LoRA parameters
//     only, optionally recomputing each block instead of keeping its
//     activations (gradient checkpointing);
//   - the inference pass: prefill and incremental decode of many sequences
//     against a KV cache the model consumes through the Cache interface
//     (serve implements it; ContiguousCache here is the simple one);
//   - LoRA: Adapter (rank, alpha, rsLoRA, any subset of q,k,v,o,gate,up,down),
//     running with the adapter switched off (pass a nil *Adapter: no second
//     copy of the weights), merging an adapter into the weights for export,
//     reading and writing PEFT adapter folders through format/peft.
//
// The typical training step, once the adapter is placed on the model's
// backend (ad.Place(m.Backend())):
//
//	ad.ZeroGrad()
//	p, err := m.Forward(ctx, batch, ad, model.TrainOptions{})   // p.Logprob, p.Entropy [N]
//	// … the objective turns p.Logprob/p.Entropy into dL/dlogprob, dL/dentropy …
//	err = p.Backward(ctx, dlogprob, dentropy)                    // accumulates ad's DA, DB
//	p.Release()                                                  // the next Forward reuses its memory
//
// and the reference (KL) logprobs come from m.Forward(ctx, batch, nil, …).
//
// All arithmetic goes through a kernels.Backend value given to Load/New; the
// model never picks a backend itself. On the hot path (Forward, Backward,
// Step) that includes the copies and clears of activations and gradients
// (Backend.Copy, Zero) and the writes into the KV cache: the model indexes
// no activation or weight in its own loops there. Every buffer an op sees
// is allocated through the backend (kernels.AllocF32), so a device backend
// can hold them all (see the kernels package's "Devices"); Model.Close,
// Adapter.Free, FreeLogits and the caches' Close give that memory back.
//
// Shapes use the kernels package's names: N tokens of a packed batch, C the
// hidden size, H query heads, KVH key/value heads, D the head dimension, I the
// MLP width, V the vocabulary, r the LoRA rank.
//
// Formulas (HF conventions): RMSNorm x·rsqrt(mean(x²)+eps)·w; RoPE in the
// rotate_half layout with optional llama3 or linear frequency scaling; causal GQA
// attention within each packed sequence; MLP down(silu(gate(x))·up(x));
// Qwen2 adds q/k/v biases; Qwen3 applies per-head RMSNorm to q and k before
// RoPE; LoRA adds scale·B·A·x with scale alpha/r (alpha/√r for rsLoRA).
//
// Gemma 3 (transformers' modeling_gemma3): embeddings times √C rounded to
// the dtype embed_tokens is stored in (EmbedScale); every
// RMSNorm multiplies by 1+w; per-head q/k norms; scores scaled by
// query_pre_attn_scalar^-1/2; sandwich norms (the attention and MLP outputs
// are normed before their residual adds, the MLP input by
// pre_feedforward_layernorm); MLP down(gelu_tanh(gate(x))·up(x)); sliding
// layers (layer_types / sliding_window_pattern) see only the last
// sliding_window keys, query included, and rotate with base
// rope_local_base_freq, full layers with rope_theta. Training attention on
// sliding layers is the backend's AttentionWindowForward/Backward, the MLP
// its GeGLUForward/Backward; decoding reads only the window's cached rows
// through the backend's decode attention. Linear rope scaling divides the full
// layers' frequencies; soft-capping is refused when config.json sets it.
package model

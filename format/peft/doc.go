// Package peft reads and writes LoRA adapters in the on-disk layout of Hugging Face
// PEFT — adapter_config.json beside adapter_model.safetensors — so that adapters
// Hone trains load unchanged in PEFT and vLLM, and adapters made there load here.
//
// Scope is what vLLM serves for Llama/Qwen models: plain LoRA on the seven
// per-layer projections (self_attn q/k/v/o_proj, mlp gate/up/down_proj), one rank
// and alpha for all of them, no bias. Files that ask for more (DoRA, modules_to_save,
// trained biases, per-module rank or alpha patterns, fan_in_fan_out, regex targets,
// LoRA variants such as aLoRA, or an init_lora_weights such as PiSSA's that PEFT
// re-runs on load to rewrite the base weights) are rejected with a message naming
// the key, instead of being half-loaded.
//
// Tensors are stored under PEFT's saved names,
//
//	base_model.model.model.layers.{N}.self_attn.q_proj.lora_A.weight   A [r, in]
//	base_model.model.model.layers.{N}.self_attn.q_proj.lora_B.weight   B [out, r]
//
// and the update they describe is ΔW = scaling · B·A ([out, in]) with scaling =
// lora_alpha / r, or lora_alpha / √r when use_rslora is set.
//
// An adapter of the multimodal Gemma 3 (Gemma3ForConditionalGeneration) has
// its layers where that model keeps its language model:
// base_model.model.model.language_model.layers.{N}… as PEFT saves it with
// transformers 4.52 and later (Gemma3LayersPath, what Write uses for such a
// model), or base_model.model.language_model.model.layers.{N}… as it did
// with transformers 4.50 and 4.51 (read only). Adapter.LayersPath records
// which. vLLM's Gemma3ForConditionalGeneration maps model.language_model.…
// onto its own module names (its hf_to_vllm_mapper), so it serves the
// adapters Write saves for that model.
package peft

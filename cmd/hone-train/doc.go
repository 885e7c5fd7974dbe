// Command hone-train trains LoRA adapters: init-model writes a randomly
// initialised tiny model folder (see train/tinymodel) for tests and demos,
// sft imitates assistant turns (train/sft) and grpo trains on groups of
// scored trajectories (train/grpojob). Both trainers keep the base weights as
// float32 or, with --dtype bfloat16, as bfloat16, computing in float32;
// --compute bf16 multiplies those bfloat16 weights by activations rounded
// to bfloat16 (AVX512-BF16, float32 accumulation; exit 2 on a CPU without
// it). --bf16-kernel portable runs the same mode in plain C on any CPU,
// several times slower than float32: for checking its accuracy only.
package main

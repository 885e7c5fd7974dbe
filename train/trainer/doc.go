// Package trainer is the optimizer loop every Hone training job shares:
//
//   - Pack puts whole laid-out trajectories (Example) into micro-batches of
//     at most a token budget; input position j predicts token j+1 and only
//     trainable tokens get a target;
//   - Accumulate runs each micro-batch forward (and, for a KL term, again
//     with the adapter off), asks the job's LossFunc for dLoss/dℓ at the
//     trainable positions, and backpropagates into the LoRA gradients, so a
//     step's gradient is the sum over its micro-batches (the loss functions
//     normalize by step-wide totals, which makes the split exact);
//   - AdamW clips the global gradient norm and steps every LoRA tensor with
//     the backend's AdamW kernel; Schedule gives constant, warm-up or cosine
//     learning rates; Order maps step numbers to data items (seeded
//     per-epoch permutations);
//   - Loop runs steps, saves each to the run folder (train/checkpoint) and
//     appends one metrics row per step to metrics.jsonl: the loss terms the
//     job reports plus entropy (mean over trainable tokens), grad_norm (before
//     clipping), lr, tokens, trainable_tokens, tokens_per_s and seconds;
//   - Setup loads the model, takes the run's lock and restores the latest
//     step (adapter, optimizer moments and update count) on --resume.
//
// Determinism: a step depends only on the restored state and its step
// number, and every reduction runs in a fixed order, so a run resumed from
// any checkpoint ends bit-identical to an uninterrupted one on the same
// backend configuration.
package trainer

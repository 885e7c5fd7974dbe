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
//     clipping), lr, tokens, trainable_tokens, tokens_per_s, seconds and
//     time (Unix seconds when the step ended, for a wall-time axis);
//     stopped (its context cancelled: SIGINT, SIGTERM), it first saves the
//     last finished step that SaveEvery left unsaved;
//   - LoadBase loads the model folder; Setup takes the run's lock and
//     restores the latest step (adapter, optimizer moments and update count)
//     on --resume. Jobs read their inputs between the two, so bad input
//     leaves the run folder untouched.
//
// Errors: those that blame the model folder, an adapter folder or the input
// files are of kind stageerr.ErrBadInput (exit code 2 in hone-train). A step whose loss,
// gradient norm (computed whether or not it clips) or updated LoRA weights
// hold NaN or Inf stops the run with an error matching ErrNotFinite before
// anything of that step is written; the steps before it stay saved.
//
// Chat template kwargs: RowKwargs lays each row out under the kwargs it
// records (trajectory.MetadataKeyChatTemplateKwargs), else under
// --chat-template-kwargs; rows that record different kwargs train
// together, each under its own, and a flag that differs from a row's
// record is a usage error. Where every row records its own, the flag lays
// out none, so a resume may add or drop it (RowKwargs.MayChange; a job
// that learns its rows only under the run's lock, grpo --watch-dir,
// compares the flag once they are read: DeferKwargs). Until some call of
// the run lays rows out under the flag, the saved config says so
// (chat_template_kwargs_idle, Options.KwargsIdle), and the first call that
// does gives the run its value, whatever earlier calls passed.
//
// Determinism: a step depends only on the restored state and its step
// number, and every reduction runs in a fixed order, so a run resumed from
// any checkpoint ends bit-identical to an uninterrupted one on the same
// backend configuration. The command's --device, --compute and --threads
// are saved with the run's config (Options.Device); a resume with others
// is logged as a warning, not refused (a run may move to another machine):
// the CPU backend's OpenBLAS, for one, sums in another order with another
// thread count.
package trainer

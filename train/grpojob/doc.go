// Package grpojob is hone-train's GRPO job: it reads scored trajectory files,
// lays every trajectory out with the model's own chat template
// (format/layout: only the tokens the policy sampled are trainable, with
// their sampled logprobs), computes group advantages (train/grpo), and runs
// steps of the chosen GRPO loss through train/trainer, checkpointing each.
//
// Data order: the groups of all inputs (file order, then row order) are
// visited in a fresh seeded permutation per epoch, cut into steps of G
// groups (G = --groups-per-step, 0: all groups); each epoch ends on a step
// of its own, smaller where G does not divide the groups (trainer.Order; a
// run saved before that keeps its order, where a step could run into the
// next epoch). A step is a function of (inputs, options, s) alone, which is
// what makes a resumed run end bit-identical to an uninterrupted one.
//
// Sessions (rounds): the input files of one command are a session of the
// run, known by their sha256s in order. Resumed with other files, the run
// begins its next session at the step it reached: the adapter and AdamW
// state carry over, the order above is seeded by --seed plus the session's
// index, and --steps/--epochs count the session's own steps. The last
// session's files again continue that session (after a kill, or with more
// --steps). Each step saves its session in trainer_state.json ("extra");
// manifest.json lists the sessions. The files are hashed before and after
// they are read, and a file whose contents changed in between is refused
// (checkpoint.CheckUnchanged): the hashes recorded are those of the bytes
// trained. Only "inputs", "steps", "epochs", the backend options and the
// checkpoint options (--save-every, --keep-last, --best-metric,
// --best-mode, which become the run's) of the saved config may change on
// resume; another change is refused as usage, naming each option that
// differs (trainer.Setup).
//
// Every trajectory must carry a reward, or an error saying why its episode
// failed: a row with neither was never scored, and the input set is refused
// as bad input, naming the file, row and group, before anything is written.
// So is a reward that is infinite or of magnitude above 1e100 (maxReward):
// the group's standard deviation squares it, and an overflow to +Inf would
// train the group as zero advantage. Under --scale-rewards none the
// bound is 1e38 (maxUnscaledReward): the advantage, the reward less its
// group's mean, is held as a float32; but for --norm art, which divides
// the advantages by their mean magnitude first.
// So is a trainable turn's sampling logprob that no sampler gives: ±Inf,
// or above 0 by more than a float rounding (maxLogprob, 1e-3): a
// probability or a logit in the field would skew the importance ratio.
// NaN is an unknown logprob (below).
//
// What a step drops, and counts in its metrics row: trajectories with an
// error (errors), trajectories whose advantage is zero
// (dropped_zero_adv — every trajectory of a group with equal rewards), and
// trajectories whose trainable tokens have no sampled logprobs
// (no_logprobs, unless --allow-no-logprobs; the run warns once about them,
// naming their rows and the flag), and trajectories with no trainable
// turn (no_trainable_tokens; warned once the same way). A step left with nothing logs
// "nothing to train" with those counts; it still counts as a step (its
// checkpoint holds the unchanged adapter) but takes no optimizer update.
//
// Besides the loss terms (loss, policy_loss, kl, clip_frac, ratio_mean) a
// step reports sampler_logp_diff_mean and sampler_logp_diff_max: how far
// the trainer's logprobs of the sampled tokens are from the sampler's,
// |ℓ_θ − ℓ_sampler| over the tokens whose sampling logprob is known (TRL
// logs the same gap). When the step starts from the weights that sampled,
// this is the mismatch between the two engines: float32 hone-serve under
// a float32 trainer, or bfloat16 weights on one side only.
//
// ART's step shape (--norm art, docs/art.md): the step's trajectories
// get ART's weights (1/trainable tokens, mean 1 over the step's tokens) and
// advantages (after --advantage-balance, divided by mean |A|·W); every
// history becomes its own example, packed in order into rows of
// --packed-sequence-length tokens (default: the longest history rounded up
// to 2048); each row is one micro-batch and one optimizer update, its loss
// the row's weighted token mean. --lr-trajectories-power scales an
// update's learning rate by (histories it trains)^p, and
// --scale-lr-by-reward-std by the trend of the mean within-group reward
// std over the run's steps, both as ART does. art.go names the ART code
// each piece restates; testdata/artstep holds the PyTorch golden.
//
// Incremental mode (Options.WatchDir): train on exactly the *.parquet files
// of a folder that the run's manifest does not list as consumed (by
// sha256), holding the run's flock; with nothing new it reports so and
// succeeds. A file whose extension is .parquet in another case alone
// (*.PARQUET) is named in a warning and not read (fileset.Set.OtherCase). Each file is read once, whole, and the bytes hashed are the
// bytes trained (checkpoint.ReadInput, fileset.Held): a file replaced
// meanwhile is never trained under the other contents' hash. A file still
// being written in place (empty, or Parquet's opening magic without the
// footer) is left for a later call with a warning naming it, and the
// other files train (one unwritten for an hour, unfinishedAfter, was
// cut short, and fails the call as bad input); a file deleted between
// the listing and its read is passed over. The session (files, first and last step) is recorded in the
// manifest before training, so a run killed mid-session is finished, not
// restarted, by the next one. Files consumed stay consumed when latest is
// moved back past their session's end: a call then warns, naming them
// (their entries removed from the manifest, they are trained again).
// Each consumed file records the digests of the groups trained from it,
// so a new file holding them (a re-scored copy) is warned of once.
package grpojob

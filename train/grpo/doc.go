// Package grpo owns the mathematics of Group Relative Policy Optimization as
// Hone trains it: group advantages (Advantages) and the token loss with its
// exact gradient with respect to the per-token log-probabilities (Loss),
// for every variant hone-train exposes.
//
// Advantages: A = r − mean(group), divided by the group's or the batch's
// population std (+1e-6) unless Scale is none. A group with equal rewards has
// A = 0 everywhere; the trainer drops zero-advantage trajectories and counts
// them.
//
// Loss (Config documents each knob and its default): with ℓ_t the current
// log-probability of a trainable token, ℓ^old_t the sampler's, δ_t = ℓ_t −
// ℓ^old_t and ρ = exp(δ_t) (token), exp(mean_t δ_t) (sequence, GSPO; the
// mean over the trajectory, or over each history), their mean (average) or
// their geometric mean (geometric_average),
//
//	art (default): l_t = −clip(sg(ρ), 1−ε, 1+ε_high)·A·ℓ_t   ε=1, ε_high=4
//	ppo:           l_t = −min(ρA, clip(ρ, 1−ε, 1+ε_high)A)  ε=0.2 (DAPO: ε_high=0.28)
//	optional:      ρ ← min(ρ, M); ρ ← 0 outside (1−ε, 1+ε_high); A_t ← A − τ·sg(δ_t)
//	optional:      A_t ← A_t + c·(m − k_t), k_t = sg(ℓ^src_t − ℓ^ref_t), m = mean k over the
//	               micro-batch (one packed row: norm art); ℓ^src = ℓ_t or ℓ^old_t (ART's kl_penalty_coef)
//	optional TIS:  l_t ← l_t·sg(min(exp(ℓ^old_t − ℓ^sampler_t), C)), or sg(min(ρ_t, C))
//	optional KL:   + β·(exp(ℓ^ref−ℓ) − (ℓ^ref−ℓ) − 1), ℓ^ref with the adapter off
//	loss = Σ_t w_t·l_t, w_t = 1/(I·n_i) (sequence), 1/T (tokens), 1/(I·L) (constant, Dr. GRPO),
//	       W_i/(T_row + 1e-6) (art: one packed row, ART's trajectory weights)
//
// The package is pure arithmetic on slices: it knows nothing of models,
// files or optimizers (train/trainer runs the passes).
package grpo

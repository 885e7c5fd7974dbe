package kernels

import (
	"fmt"
	"math"
)

// RowChoice is what RowChooser gives for one choice: the token and what
// its logprob needs (Logit − LSE), without the row crossing to the host.
type RowChoice struct {
	ID    int32   // the chosen token; −1 for a row with no candidate (see RowChooser)
	Logit float32 // the row's raw logit at ID (−Inf when ID is −1)
	Max   float32 // the row's largest entry that is not NaN (−Inf when there is none)
	LSE   float32 // log Σ_j e^row[j] over the entries that are not NaN; 0 for a row with no candidate
}

// Logprob is the chosen token's logprob under the raw model, Logit − LSE,
// with the rule of RowChooser for a row holding +Inf: 0 when Logit is
// +Inf (then so is LSE, and Logit − LSE would be NaN).
func (c RowChoice) Logprob() float32 { return ChoiceLogprob(c.Logit, c.LSE) }

// ChoiceLogprob is logit − lse, a token's logprob from its logit and its
// row's log-sum-exp, except that a +Inf logit (whose row's lse is +Inf)
// gives 0: the limit of softmax as one entry grows without bound. Host
// samplers use it so that their logprobs follow RowChooser's rule.
func ChoiceLogprob(logit, lse float32) float32 {
	if math.IsInf(float64(logit), 1) {
		return 0
	}
	return logit - lse
}

// RowChooser is implemented by a backend that chooses tokens from logits
// rows in its own memory, so that a few values a choice reach the host
// instead of the row: kernels/cuda (sample.cu; not run on a GPU yet), where
// serve/engine's host sampler would copy [32, 151936] logits, 19 MB, across
// PCIe every decode step. Host backends (ref, cpu) do not implement it:
// their rows are the host's already, and serve/engine keeps its host
// sampler for them, and on every backend for what ChooseRows does not
// cover — penalties, constraints, top_k and top_p, top_logprobs.
//
// It covers the two common choices of RL rollouts: greedy (argmax) and
// sampling from softmax(row/T) over the whole row, each with the chosen
// token's logprob. For greedy the token is the host's (the lowest id of
// the largest entry, exactly). A draw is the token whose interval of the
// cumulative distribution, in id order, holds u: the host's sampler's
// definition, with the sums added in another order, so that where u falls
// within rounding (about 1e-15 relative) of an interval's end the two may
// pick neighbouring tokens. LSE agrees with the host's log-sum-exp within
// float32 rounding (the exponentials are the device's expf), not bit for
// bit.
//
// Rows that are not finite follow one rule, the same on every
// implementation, on ref's oracle and in serve/engine's host sampler:
//
//   - NaN entries count as −Inf: never chosen, no probability, left out
//     of Max and LSE (a NaN logit is a broken value; one of them should
//     not decide a choice, and the row's other entries still rank).
//   - If any entry is +Inf, the choice — greedy or drawn, at any
//     temperature — is the lowest id holding +Inf, with Logit, Max and
//     LSE +Inf and logprob 0 (RowChoice.Logprob): softmax's limit as an
//     entry grows without bound, and greedy's tie rule (the lowest id)
//     among several. A draw still takes its uniform, so that the
//     sequence's stream stays where a finite row would leave it.
//   - A row with no candidate — every entry NaN or −Inf — gives ID −1
//     (Logit and Max −Inf, LSE 0), and serve/engine ends that sequence
//     with an error naming the cause. There is no distribution to draw
//     from: such a row comes from a model whose numerics blew up or a
//     constraint that masked every token, and answering a fixed token
//     (token 0, "!" in Qwen's vocabulary, step after step) would hide
//     the fault in a plausible-looking completion or rollout.
//
// Finite rows, with or without −Inf entries, are unaffected by the rule.
type RowChooser interface {
	// ChooseRows sets dst[i], for each i < len(dst), from row rows[i] of
	// logits [R, V] (the backend's memory; R = len(logits)/V, several
	// choices may share a row): with invTemp[i] = 0 the argmax (the
	// lowest id of the largest entry, NaN entries passed over); with
	// invTemp[i] = 1/T > 0 a draw from softmax(row·invTemp[i]) at u[i] ∈
	// [0, 1): with e_j = e^((row[j] − Max)·invTemp[i]) formed as ExpShift
	// forms it (0 for a NaN entry), the lowest j with e_j ≠ 0 and
	// Σ_{k≤j} e_k > u[i]·Σ_k e_k; rows holding +Inf, and rows whose
	// entries are all NaN or −Inf, by the rule above. Logit, Max and LSE
	// are the row's (LSE at
	// temperature 1, whatever invTemp). The logits are read after the ops
	// queued before (a stream-ordered backend waits for them); the rows
	// stay as they are. rows, invTemp and u hold len(dst) values (u[i]
	// unused where invTemp[i] = 0); it panics naming itself on a wrong
	// size, a row outside [0, R), or an invTemp that is negative or not
	// finite.
	ChooseRows(dst []RowChoice, logits []float32, V int, rows []int32, invTemp []float32, u []float64)
}

// NeedChooseRows panics unless the arguments of ChooseRows are consistent
// (see RowChooser): its checks, for its implementations.
func NeedChooseRows(dst []RowChoice, logits []float32, V int, rows []int32, invTemp []float32, u []float64) {
	const op = "ChooseRows"
	n := len(dst)
	NeedSizes(op, V)
	Need(op, "rows", len(rows), n)
	Need(op, "invTemp", len(invTemp), n)
	Need(op, "u", len(u), n)
	if n == 0 {
		return
	}
	if V == 0 || len(logits)%V != 0 {
		panic(fmt.Sprintf("kernels.%s: logits holds %d values, not whole rows of V = %d", op, len(logits), V))
	}
	R := len(logits) / V
	for i, r := range rows {
		if r < 0 || int(r) >= R {
			panic(fmt.Sprintf("kernels.%s: rows[%d] = %d outside the %d rows of logits", op, i, r, R))
		}
		if v := invTemp[i]; !(v >= 0) || math.IsInf(float64(v), 1) {
			panic(fmt.Sprintf("kernels.%s: invTemp[%d] = %g: want 0 (greedy) or a finite 1/T > 0", op, i, v))
		}
		if x := u[i]; invTemp[i] != 0 && !(x >= 0 && x < 1) {
			panic(fmt.Sprintf("kernels.%s: u[%d] = %g: want a uniform in [0, 1)", op, i, x))
		}
	}
}

package grpojob

import (
	"math"

	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/train/trainer"
)

// This file holds what hone-train does to reproduce ART's step shape
// (--norm art) and ART's learning-rate knobs. The ART code restated is
// OpenPipe ART's src/art/preprocessing/pack.py (the batch normalization
// of weights and advantages, advantage_balance, greedy packing into rows),
// src/art/loss.py (the per-row token mean) and src/art/local/backend.py
// (scale_learning_rate_by_reward_std_dev; one optimizer step per row with
// lr × (#results in the row)^num_trajectories_learning_rate_multiplier_power).

// artRowEps is ART's 1e-6 in w = 1/(n + 1e-6).
const artRowEps = 1e-6

// artRowMultiple is what ART rounds the longest result up to when no row
// length is given: rows of ceil(max/2048)·2048 tokens.
const artRowMultiple = 2048

// balanceAdvantages applies ART's advantage_balance b ∈ [−1, 1] in place:
// b > 0 scales the negative advantages by 1 − b, b < 0 the positive ones
// by 1 + b, so that one sign weighs less.
func balanceAdvantages(exs []trainer.Example, b float64) {
	for i := range exs {
		a := exs[i].Adv
		switch {
		case b > 0 && a < 0:
			exs[i].Adv = a * (1 - b)
		case b < 0 && a > 0:
			exs[i].Adv = a * (1 + b)
		}
	}
}

// artWeights returns ART's weight W_i of each trajectory and divides the
// advantages in place as ART does for a train() call:
//
//	w_i = 1/(n_i + 1e-6), then W_i = w_i / mean over trainable tokens of w
//	A_i ← A_i / mean over trainable tokens of |A|·W
//
// with n_i trajectory i's trainable tokens over all its histories, so that
// every trajectory has the same total weight and the advantages have mean
// magnitude 1 under it. exs must have trainable tokens and a non-zero
// advantage somewhere (the step drops zero-advantage trajectories).
func artWeights(exs []trainer.Example) []float64 {
	w := make([]float64, len(exs))
	n := make([]float64, len(exs))
	var sw, tokens float64
	for i := range exs {
		n[i] = float64(exs[i].Trainable())
		w[i] = 1 / (n[i] + artRowEps)
		sw += w[i] * n[i]
		tokens += n[i]
	}
	for i := range w {
		w[i] /= sw / tokens
	}
	var sa float64
	for i := range exs {
		sa += math.Abs(exs[i].Adv) * w[i] * n[i]
	}
	if m := sa / tokens; m > 0 {
		for i := range exs {
			exs[i].Adv /= m
		}
	}
	return w
}

// artHistories splits each trajectory into one example per history with
// trainable tokens, as ART packs every history as its own result: the
// history keeps its trajectory's advantage and weight.
func artHistories(exs []trainer.Example, w []float64) ([]trainer.Example, []float64) {
	var out []trainer.Example
	var ow []float64
	for i, e := range exs {
		for _, s := range e.Seqs {
			h := trainer.Example{Seqs: []layout.Sequence{s}, Adv: e.Adv}
			if h.Trainable() == 0 {
				continue
			}
			out = append(out, h)
			ow = append(ow, w[i])
		}
	}
	return out, ow
}

// artRowLength is the packed row length: n when given, else ART's
// default, the longest history rounded up to a multiple of 2048 and capped
// at maxSeqLen (--max-seq-len, ART's max_seq_length; 0: no cap), as
// LocalBackend._get_packed_tensors takes the min of the two. Uncapped, a
// row could be up to 2047 tokens longer than ART's and hold histories ART
// puts in the next row, a different update count. No history is longer
// than maxSeqLen (those are left out), so the cap cuts none.
func artRowLength(hs []trainer.Example, n, maxSeqLen int) int {
	if n > 0 {
		return n
	}
	longest := 1
	for i := range hs {
		longest = max(longest, hs[i].Tokens())
	}
	row := (longest + artRowMultiple - 1) / artRowMultiple * artRowMultiple
	if maxSeqLen > 0 {
		row = min(row, maxSeqLen)
	}
	return row
}

// histories counts the histories of exs that have trainable tokens: ART's
// results, what --lr-trajectories-power raises to its power.
func histories(exs []trainer.Example) int {
	n := 0
	for _, e := range exs {
		for _, s := range e.Seqs {
			if (&trainer.Example{Seqs: []layout.Sequence{s}}).Trainable() > 0 {
				n++
			}
		}
	}
	return n
}

// rewardStdLRScale is ART's scale_learning_rate_by_reward_std_dev: fit
// y = m·x + b by least squares to y[k], the mean within-group reward std
// of step k (k = 0..s, this step last), and scale the learning rate by the
// fit at the last step over its intercept, (m·s + b)/b. With fewer than two
// steps, or b ≤ 0, the scale is 1. As reward diversity shrinks, so does
// the step size.
func rewardStdLRScale(y []float64) float64 {
	n := float64(len(y))
	if len(y) < 2 {
		return 1
	}
	var mx, my float64
	for k, v := range y {
		mx += float64(k)
		my += v
	}
	mx, my = mx/n, my/n
	var sxy, sxx float64
	for k, v := range y {
		dx := float64(k) - mx
		sxy += dx * (v - my)
		sxx += dx * dx
	}
	m := sxy / sxx
	b := my - m*mx
	if !(b > 0) {
		return 1
	}
	return (m*float64(len(y)-1) + b) / b
}

// groupRewardStd is the mean over groups with at least two rewards of the
// population std of the group's rewards (failed episodes excluded): ART's
// train/reward_std_dev. 0 when no group has two rewards.
func groupRewardStd(gs []group, idx []int) float64 {
	sum, n := 0.0, 0
	for _, g := range idx {
		if r := gs[g].Rewards; len(r) > 1 {
			_, s := meanStd(r)
			sum += s
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

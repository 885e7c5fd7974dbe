package grpo

import (
	"fmt"
	"math"
)

// Config selects the loss variant. The zero value is not valid; start from
// DefaultConfig. Fields added after the first release are omitempty with
// their zero value as the default, so configs saved before them compare
// equal on resume.
type Config struct {
	// Loss is "art" (default) or "ppo":
	//
	//	art: l_t = −clip(sg(ρ), 1−ε, 1+ε_high) · A · ℓ_t
	//	ppo: l_t = −min(ρ·A, clip(ρ, 1−ε, 1+ε_high)·A)
	Loss string `json:"loss"`
	// Epsilon and EpsilonHigh bound the clip range [1−ε, 1+ε_high].
	// ART's defaults are 1.0 and 4.0 for "art"; PPO's are 0.2 and 0.2
	// (DAPO's clip-higher: 0.2 and 0.28).
	Epsilon     float64 `json:"epsilon"`
	EpsilonHigh float64 `json:"epsilon_high"`
	// Level is how the importance ratio ρ_t is formed from the token ratio
	// r_t = exp(δ_t), δ_t = ℓ_t − ℓ^old_t, and the sequence ratio
	// s = exp(mean of δ over the tokens of the token's sequence):
	//
	//	token:             ρ_t = r_t
	//	sequence:          ρ_t = s             (GSPO)
	//	average:           ρ_t = (r_t + s)/2
	//	geometric_average: ρ_t = √r_t · √s
	//
	// (ART's importance_sampling_level, src/art/loss.py.) The sequence is
	// the whole trajectory, or with RatioPerHistory each of its histories.
	Level string `json:"level"`
	// RatioPerHistory takes the sequence ratio s over each history (each
	// token sequence a trajectory is laid out as) instead of over the
	// whole trajectory. ART does this: every history is its own packed
	// result with its own group id, and loss.py averages δ per group id.
	RatioPerHistory bool `json:"ratio_per_history,omitempty"`
	// MaxISWeight, when positive, caps the ratio: ρ ← min(ρ, MaxISWeight)
	// (no gradient through a capped ratio). ART calls it
	// max_negative_advantage_importance_sampling_weight, but applies it to
	// every token whatever the sign of its advantage; so does Hone.
	MaxISWeight float64 `json:"max_is_weight,omitempty"`
	// MaskRatio zeroes the ratio outside the open interval
	// (1−ε, 1+ε_high) (ART's mask_prob_ratio), after MaxISWeight.
	MaskRatio bool `json:"mask_prob_ratio,omitempty"`
	// KimiTau, when not 0, shifts each token's advantage by the stop-
	// gradient log ratio: A_t ← A − τ·sg(δ_t) (ART's kimi_k2_tau), after
	// the ratio is formed.
	KimiTau float64 `json:"kimi_k2_tau,omitempty"`
	// Norm is how token losses are summed into the step loss:
	//
	//	sequence: (1/I) Σ_i (1/n_i) Σ_t l_t   every trajectory weighs the same
	//	tokens:   (1/T) Σ_i Σ_t l_t           token mean over the step (DAPO)
	//	constant: (1/(I·L)) Σ_i Σ_t l_t       L = NormConstant (Dr. GRPO)
	//	art:      Σ_t W_i·l_t / (T_mb + 1e-6) ART: the token mean of a packed
	//	                                      row, W_i the trajectory's weight
	//
	// with I the trajectories and T the trainable tokens of the whole step
	// (all micro-batches), n_i the trainable tokens of trajectory i, and
	// for art T_mb the trainable tokens of this micro-batch (one packed
	// row, its own optimizer update) and W_i = Tokens.Weight[i].
	Norm         string  `json:"norm"`
	NormConstant float64 `json:"norm_constant"`
	// Beta weighs the KL penalty to the base model (adapter off), k3
	// estimator: k_t = exp(ℓ^ref_t − ℓ_t) − (ℓ^ref_t − ℓ_t) − 1. 0: off.
	Beta float64 `json:"beta"`
	// KLPenaltyCoef, when positive, shifts each token's advantage by its
	// KL to the base model (adapter off) against the micro-batch's mean,
	// and adds no loss term (ART's kl_penalty_coef, src/art/loss.py):
	//
	//	A_t ← A_t + c·(m − k_t),  k_t = sg(ℓ^src_t − ℓ^ref_t),  m = mean of k
	//
	// over the micro-batch's tokens, after KimiTau. ART takes m over the
	// tokens its loss sees at once, one packed row, so the penalty needs
	// Norm "art", whose micro-batch is that row: with the other norms a
	// micro-batch is only a memory bound, and m would change with it.
	KLPenaltyCoef float64 `json:"kl_penalty_coef,omitempty"`
	// KLPenaltySource is ℓ^src (ART's kl_penalty_source): "" (or
	// "current_learner", ART's default) the current ℓ_t, "sample" ℓ^old_t, the logprob
	// the ratio is taken against (ℓ_t where unknown, as ART fills it).
	KLPenaltySource string `json:"kl_penalty_source,omitempty"`
	// TIS, when positive, multiplies each policy token loss by a truncated
	// importance weight, never differentiated. Its form is TISMode's:
	//
	//	"" (recomputed): sg(min(exp(ℓ^old_t − ℓ^sampler_t), TIS)); ℓ^old is
	//	     recomputed with the weights at the start of the step, so the
	//	     weight corrects the sampler/trainer mismatch (ART with
	//	     precalculate_logprobs)
	//	sampler: sg(min(ρ_t, TIS)) with ρ_t the ratio above, against the
	//	     sampler's logprobs (ART without precalculate_logprobs)
	TIS     float64 `json:"tis"`
	TISMode string  `json:"tis_mode,omitempty"`
}

// validateKLPenalty checks KLPenaltyCoef and KLPenaltySource.
func (c Config) validateKLPenalty() error {
	if !(c.KLPenaltyCoef >= 0) || math.IsInf(c.KLPenaltyCoef, 0) {
		return fmt.Errorf("grpo: kl-penalty-coef %v must be finite and ≥ 0", c.KLPenaltyCoef)
	}
	switch c.KLPenaltySource {
	case "", "current_learner", "sample":
	default:
		return fmt.Errorf("grpo: kl-penalty-source %q: want current_learner or sample", c.KLPenaltySource)
	}
	if c.KLPenaltySource == "sample" && c.KLPenaltyCoef == 0 {
		return fmt.Errorf("grpo: kl-penalty-source %s without kl-penalty-coef has nothing to do", c.KLPenaltySource)
	}
	if c.KLPenaltyCoef > 0 && c.Norm != "art" {
		return fmt.Errorf("grpo: kl-penalty-coef takes the KL's mean over each packed row, as ART does, so it needs norm art (--norm art), not %s", c.Norm)
	}
	return nil
}

// DefaultConfig is ART's default: the clipped stop-gradient importance
// weight times A·ℓ (ε = 1, ε_high = 4, so the weight lies in [0, 5]),
// token-level ratios, every trajectory weighted equally, no KL, no TIS.
func DefaultConfig() Config {
	return Config{Loss: "art", Epsilon: 1, EpsilonHigh: 4, Level: "token", Norm: "sequence", NormConstant: 1024}
}

// Validate reports the first bad field.
func (c Config) Validate() error {
	switch c.Loss {
	case "art", "ppo":
	default:
		return fmt.Errorf("grpo: loss %q: want art or ppo", c.Loss)
	}
	switch c.Level {
	case "token", "sequence", "average", "geometric_average":
	default:
		return fmt.Errorf("grpo: ratio level %q: want token, sequence, average or geometric_average", c.Level)
	}
	switch c.Norm {
	case "sequence", "tokens", "art":
	case "constant":
		if !(c.NormConstant > 0) {
			return fmt.Errorf("grpo: norm constant %v must be positive", c.NormConstant)
		}
	default:
		return fmt.Errorf("grpo: norm %q: want sequence, tokens, constant or art", c.Norm)
	}
	if !(c.Epsilon >= 0) || !(c.EpsilonHigh >= 0) {
		return fmt.Errorf("grpo: epsilon %v and epsilon-high %v must be ≥ 0", c.Epsilon, c.EpsilonHigh)
	}
	if !(c.Beta >= 0) || !(c.TIS >= 0) || !(c.MaxISWeight >= 0) {
		return fmt.Errorf("grpo: beta %v, tis %v and max-is-weight %v must be ≥ 0", c.Beta, c.TIS, c.MaxISWeight)
	}
	if math.IsNaN(c.KimiTau) || math.IsInf(c.KimiTau, 0) {
		return fmt.Errorf("grpo: kimi-k2-tau %v must be finite", c.KimiTau)
	}
	switch c.TISMode {
	case "", "sampler":
	default:
		return fmt.Errorf("grpo: tis mode %q: want recomputed or sampler", c.TISMode)
	}
	if err := c.validateKLPenalty(); err != nil {
		return err
	}
	if c.RatioPerHistory && c.Level == "token" {
		return fmt.Errorf("grpo: a per-history ratio needs a sequence ratio (level sequence, average or geometric_average), not token")
	}
	return nil
}

// Tokens are the trainable tokens of whole trajectories (a micro-batch):
// slices indexed by token t share one length T.
type Tokens struct {
	Logprob []float32 // ℓ_t under the current policy
	Old     []float32 // ℓ^old_t; NaN: unknown, treated as on-policy (ρ_t = 1)
	Sampler []float32 // the sampler's ℓ_t, read only when Config.TIS > 0 in recomputed mode (NaN: weight 1)
	Ref     []float32 // base-model ℓ_t, read only when Config.Beta or KLPenaltyCoef > 0
	Item    []int32   // trajectory index of token t, into Adv and ItemTokens
	Adv     []float64 // advantage of each trajectory
	// ItemTokens[i] is n_i, trajectory i's trainable tokens. Every token of
	// a trajectory must be in the same Tokens.
	ItemTokens []int
	// Hist is the history (token sequence) of token t, into HistTokens,
	// which counts each history's trainable tokens; read only with
	// Config.RatioPerHistory.
	Hist       []int32
	HistTokens []int
	// Weight is W_i per trajectory, read only with Config.Norm "art".
	Weight []float64
}

// Totals are the step-wide counts the normalization divides by.
type Totals struct {
	Items  int // I: trajectories in the step
	Tokens int // T: trainable tokens in the step
}

// Terms are the loss of a micro-batch as its share of the step loss, so
// that summing Terms over the step's micro-batches gives the step's values.
type Terms struct {
	Loss   float64 // Policy + β·KL
	Policy float64 // the normalized policy term
	KL     float64 // the normalized k3 term (before β)
	// KLRef is m, the mean of sg(ℓ^src − ℓ^ref) over the micro-batch's
	// tokens (ART's kl_policy_ref), when KLPenaltyCoef > 0; not normalized.
	KLRef   float64
	Clipped int     // tokens whose ratio was clipped (ppo: the clipped branch was taken)
	Masked  int     // tokens whose ratio was capped (MaxISWeight) or masked (MaskRatio)
	Tokens  int     // tokens seen
	Ratio   float64 // Σ_t ρ_t over tokens seen (for the mean ratio)
}

// Add accumulates o into t.
func (t *Terms) Add(o Terms) {
	t.Loss += o.Loss
	t.Policy += o.Policy
	t.KL += o.KL
	t.KLRef += o.KLRef
	t.Clipped += o.Clipped
	t.Masked += o.Masked
	t.Tokens += o.Tokens
	t.Ratio += o.Ratio
}

// artRowEps is added to a packed row's token count before dividing (ART's
// value in loss.py).
const artRowEps = 1e-6

// Loss returns the micro-batch's terms and dLoss/dℓ_t for every token.
// See Config for the formulas; the gradient is exact for each variant.
// Writing ρ_t = f(r_t, s_g) with g the token's sequence (n_g tokens):
//
//	∂ρ_t/∂ℓ_u = a_t·[u = t] + b_t/n_g·[u ∈ g]
//	token a = r, b = 0; sequence a = 0, b = s; average a = r/2, b = s/2;
//	geometric a = b = ρ/2; a = b = 0 where ρ was capped or masked
//	art:  ∂l_t/∂ℓ_t = −c_t·A_t (c the clipped, stop-gradient weight)
//	ppo:  ∂l_t/∂ρ_t = −A_t when the unclipped branch is the minimum, else 0
//	KL:   ∂k_t/∂ℓ_t = 1 − exp(ℓ^ref_t − ℓ_t)
//
// each times the token's normalization weight and TIS weight (β and no
// TIS weight for KL).
func Loss(c Config, tk Tokens, tot Totals) (Terms, []float64, error) {
	seqOf, seqTokens, err := c.check(tk, tot)
	if err != nil {
		return Terms{}, nil, err
	}
	T, I := len(tk.Logprob), len(tk.Adv)
	// δ_t = ℓ_t − ℓ^old_t, with unknown old logprobs treated as ℓ_t itself.
	delta := make([]float64, T)
	for t := range delta {
		if o := tk.Old[t]; !isNaN32(o) {
			delta[t] = float64(tk.Logprob[t]) - float64(o)
		}
	}
	// Normalization weight of each trajectory's tokens.
	w := make([]float64, I)
	for i := range w {
		switch c.Norm {
		case "sequence":
			w[i] = 1 / (float64(tot.Items) * float64(max(tk.ItemTokens[i], 1)))
		case "tokens":
			w[i] = 1 / float64(tot.Tokens)
		case "constant":
			w[i] = 1 / (float64(tot.Items) * c.NormConstant)
		case "art":
			w[i] = tk.Weight[i] / (float64(T) + artRowEps)
		}
	}
	seqRatio, err := c.seqRatios(seqOf, seqTokens, delta)
	if err != nil {
		return Terms{}, nil, err
	}
	klShift, klRef := c.klPenalty(tk)
	lo, hi := 1-c.Epsilon, 1+c.EpsilonHigh
	grad := make([]float64, T)
	seqGrad := make([]float64, len(seqTokens)) // Σ_t ∂L/∂ρ_t·b_t per sequence
	terms := Terms{KLRef: klRef}
	for t := range T {
		i := tk.Item[t]
		s := 0.0
		if seqRatio != nil {
			s = seqRatio[seqOf[t]]
		}
		rho, a, b, masked := c.ratio(math.Exp(delta[t]), s)
		if masked {
			terms.Masked++
		}
		A := tk.Adv[i]
		if c.KimiTau != 0 {
			A -= c.KimiTau * delta[t]
		}
		if klShift != nil {
			A += klShift[t]
		}
		clipped := math.Min(math.Max(rho, lo), hi)
		var l, dl float64 // token loss and its derivative (w.r.t. ℓ_t for art, ρ_t for ppo)
		switch c.Loss {
		case "art":
			l = -clipped * A * float64(tk.Logprob[t])
			dl = -clipped * A
			if clipped != rho {
				terms.Clipped++
			}
		case "ppo":
			un, cl := rho*A, clipped*A
			if cl < un {
				l = -cl // the clipped branch is constant in θ
				terms.Clipped++
			} else {
				l = -un
				dl = -A
			}
		}
		wt := w[i] * c.tisWeight(tk, t, rho)
		terms.Policy += wt * l
		if c.Loss == "art" {
			grad[t] += wt * dl
		} else {
			grad[t] += wt * dl * a
			if b != 0 {
				seqGrad[seqOf[t]] += wt * dl * b
			}
		}
		if c.Beta > 0 {
			d := float64(tk.Ref[t]) - float64(tk.Logprob[t])
			k := math.Exp(d) - d - 1
			terms.KL += w[i] * k
			grad[t] += c.Beta * w[i] * (1 - math.Exp(d))
		}
		terms.Tokens++
		terms.Ratio += rho
	}
	if c.Loss == "ppo" && seqRatio != nil {
		for t, g := range seqOf {
			grad[t] += seqGrad[g] / float64(seqTokens[g])
		}
	}
	terms.Loss = terms.Policy + c.Beta*terms.KL
	return terms, grad, nil
}

// check validates tk against c and tot, and returns the sequence each
// token's sequence ratio is taken over (its trajectory, or its history
// with RatioPerHistory) and each sequence's token count.
func (c Config) check(tk Tokens, tot Totals) ([]int32, []int, error) {
	T := len(tk.Logprob)
	if len(tk.Old) != T || len(tk.Item) != T {
		return nil, nil, fmt.Errorf("grpo: %d logprobs, %d old logprobs, %d item indices", T, len(tk.Old), len(tk.Item))
	}
	if c.TIS > 0 && c.TISMode == "" && len(tk.Sampler) != T {
		return nil, nil, fmt.Errorf("grpo: truncated IS needs %d sampler logprobs, got %d", T, len(tk.Sampler))
	}
	if (c.Beta > 0 || c.KLPenaltyCoef > 0) && len(tk.Ref) != T {
		return nil, nil, fmt.Errorf("grpo: KL needs %d reference logprobs, got %d", T, len(tk.Ref))
	}
	if len(tk.ItemTokens) != len(tk.Adv) {
		return nil, nil, fmt.Errorf("grpo: %d advantages for %d trajectories", len(tk.Adv), len(tk.ItemTokens))
	}
	if c.Norm == "art" && len(tk.Weight) != len(tk.Adv) {
		return nil, nil, fmt.Errorf("grpo: norm art needs %d trajectory weights, got %d", len(tk.Adv), len(tk.Weight))
	}
	if c.Norm != "art" && (tot.Items <= 0 || tot.Tokens <= 0) {
		return nil, nil, fmt.Errorf("grpo: step totals %+v must be positive", tot)
	}
	for _, it := range tk.Item {
		if it < 0 || int(it) >= len(tk.Adv) {
			return nil, nil, fmt.Errorf("grpo: trajectory index %d outside [0, %d)", it, len(tk.Adv))
		}
	}
	if !c.RatioPerHistory {
		return tk.Item, tk.ItemTokens, nil
	}
	if len(tk.Hist) != T {
		return nil, nil, fmt.Errorf("grpo: a per-history ratio needs %d history indices, got %d", T, len(tk.Hist))
	}
	for _, h := range tk.Hist {
		if h < 0 || int(h) >= len(tk.HistTokens) {
			return nil, nil, fmt.Errorf("grpo: history index %d outside [0, %d)", h, len(tk.HistTokens))
		}
	}
	return tk.Hist, tk.HistTokens, nil
}

// seqRatios returns s_g = exp(mean_{t∈g} δ_t) per sequence g, or nil at
// token level. Every token of a sequence must be present.
func (c Config) seqRatios(seqOf []int32, seqTokens []int, delta []float64) ([]float64, error) {
	if c.Level == "token" {
		return nil, nil
	}
	ratio := make([]float64, len(seqTokens))
	cnt := make([]int, len(seqTokens))
	for t, g := range seqOf {
		ratio[g] += delta[t]
		cnt[g]++
	}
	for g := range ratio {
		if cnt[g] != seqTokens[g] {
			return nil, fmt.Errorf("grpo: sequence %d has %d of its %d tokens in this batch; sequence-level ratios need all", g, cnt[g], seqTokens[g])
		}
		ratio[g] = math.Exp(ratio[g] / float64(max(cnt[g], 1)))
	}
	return ratio, nil
}

// ratio forms ρ from the token ratio r and the sequence ratio s (Level),
// then caps and masks it, returning the coefficients of ∂ρ/∂ℓ_t (a) and
// ∂ρ/∂mean δ (b), both 0 for a capped or masked ratio (masked true).
func (c Config) ratio(r, s float64) (rho, a, b float64, masked bool) {
	switch c.Level {
	case "token":
		rho, a, b = r, r, 0
	case "sequence":
		rho, a, b = s, 0, s
	case "average":
		rho, a, b = (r+s)/2, r/2, s/2
	case "geometric_average":
		rho = math.Sqrt(r) * math.Sqrt(s)
		a, b = rho/2, rho/2
	}
	if c.MaxISWeight > 0 && rho > c.MaxISWeight {
		rho, a, b, masked = c.MaxISWeight, 0, 0, true
	}
	if c.MaskRatio && !(rho > 1-c.Epsilon && rho < 1+c.EpsilonHigh) {
		rho, a, b, masked = 0, 0, 0, true
	}
	return rho, a, b, masked
}

// klPenalty returns each token's advantage shift c·(m − k_t) and m (see
// Config.KLPenaltyCoef), or nil and 0 without the penalty. k_t is a
// constant of the loss (ART detaches it), so it adds nothing to the
// gradient but through A_t.
func (c Config) klPenalty(tk Tokens) ([]float64, float64) {
	if c.KLPenaltyCoef <= 0 || len(tk.Logprob) == 0 {
		return nil, 0
	}
	k := make([]float64, len(tk.Logprob))
	sum := 0.0
	for t := range k {
		src := tk.Logprob[t]
		if c.KLPenaltySource == "sample" && !isNaN32(tk.Old[t]) {
			src = tk.Old[t]
		}
		k[t] = float64(src) - float64(tk.Ref[t])
		sum += k[t]
	}
	m := sum / float64(len(k))
	for t := range k {
		k[t] = c.KLPenaltyCoef * (m - k[t])
	}
	return k, m
}

// tisWeight is token t's truncated importance weight (1 without TIS).
func (c Config) tisWeight(tk Tokens, t int, rho float64) float64 {
	if c.TIS <= 0 {
		return 1
	}
	if c.TISMode == "sampler" {
		return math.Min(rho, c.TIS)
	}
	if isNaN32(tk.Old[t]) || isNaN32(tk.Sampler[t]) {
		return 1
	}
	return math.Min(math.Exp(float64(tk.Old[t])-float64(tk.Sampler[t])), c.TIS)
}

func isNaN32(x float32) bool { return x != x }

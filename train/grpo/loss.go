package grpo

import (
	"fmt"
	"math"
)

// Config selects the loss variant. The zero value is not valid; start from
// DefaultConfig.
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
	// Level is "token" (ρ_t = exp(ℓ_t − ℓ^old_t)) or "sequence" (GSPO:
	// ρ_i = exp(mean over the trajectory's tokens of ℓ_t − ℓ^old_t), one
	// ratio shared by all tokens of trajectory i).
	Level string `json:"level"`
	// Norm is how token losses are summed into the step loss:
	//
	//	sequence: (1/I) Σ_i (1/n_i) Σ_t l_t   every trajectory weighs the same
	//	tokens:   (1/T) Σ_i Σ_t l_t           token mean over the step (DAPO)
	//	constant: (1/(I·L)) Σ_i Σ_t l_t       L = NormConstant (Dr. GRPO)
	//
	// with I the trajectories and T the trainable tokens of the whole step
	// (all micro-batches), n_i the trainable tokens of trajectory i.
	Norm         string  `json:"norm"`
	NormConstant float64 `json:"norm_constant"`
	// Beta weighs the KL penalty to the base model (adapter off), k3
	// estimator: k_t = exp(ℓ^ref_t − ℓ_t) − (ℓ^ref_t − ℓ_t) − 1. 0: off.
	Beta float64 `json:"beta"`
	// TIS, when positive, multiplies each policy token loss by the
	// truncated importance weight sg(min(exp(ℓ^old_t − ℓ^sampler_t), TIS)),
	// correcting for the sampler/trainer mismatch. ℓ^old is then recomputed
	// with the current weights at the start of the step.
	TIS float64 `json:"tis"`
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
	case "token", "sequence":
	default:
		return fmt.Errorf("grpo: ratio level %q: want token or sequence", c.Level)
	}
	switch c.Norm {
	case "sequence", "tokens":
	case "constant":
		if !(c.NormConstant > 0) {
			return fmt.Errorf("grpo: norm constant %v must be positive", c.NormConstant)
		}
	default:
		return fmt.Errorf("grpo: norm %q: want sequence, tokens or constant", c.Norm)
	}
	if !(c.Epsilon >= 0) || !(c.EpsilonHigh >= 0) {
		return fmt.Errorf("grpo: epsilon %v and epsilon-high %v must be ≥ 0", c.Epsilon, c.EpsilonHigh)
	}
	if !(c.Beta >= 0) || !(c.TIS >= 0) {
		return fmt.Errorf("grpo: beta %v and tis %v must be ≥ 0", c.Beta, c.TIS)
	}
	return nil
}

// Tokens are the trainable tokens of whole trajectories (a micro-batch):
// slices indexed by token t share one length T.
type Tokens struct {
	Logprob []float32 // ℓ_t under the current policy
	Old     []float32 // ℓ^old_t; NaN: unknown, treated as on-policy (ρ_t = 1)
	Sampler []float32 // the sampler's ℓ_t, read only when Config.TIS > 0 (NaN: weight 1)
	Ref     []float32 // base-model ℓ_t, read only when Config.Beta > 0
	Item    []int32   // trajectory index of token t, into Adv and ItemTokens
	Adv     []float64 // advantage of each trajectory
	// ItemTokens[i] is n_i, trajectory i's trainable tokens. Every token of
	// a trajectory must be in the same Tokens.
	ItemTokens []int
}

// Totals are the step-wide counts the normalization divides by.
type Totals struct {
	Items  int // I: trajectories in the step
	Tokens int // T: trainable tokens in the step
}

// Terms are the loss of a micro-batch as its share of the step loss, so
// that summing Terms over the step's micro-batches gives the step's values.
type Terms struct {
	Loss    float64 // Policy + β·KL
	Policy  float64 // the normalized policy term
	KL      float64 // the normalized k3 term (before β)
	Clipped int     // tokens whose ratio was clipped (ppo: the clipped branch was taken)
	Tokens  int     // tokens seen
	Ratio   float64 // Σ_t ρ_t over tokens seen (for the mean ratio)
}

// Add accumulates o into t.
func (t *Terms) Add(o Terms) {
	t.Loss += o.Loss
	t.Policy += o.Policy
	t.KL += o.KL
	t.Clipped += o.Clipped
	t.Tokens += o.Tokens
	t.Ratio += o.Ratio
}

// Loss returns the micro-batch's terms and dLoss/dℓ_t for every token.
// See Config for the formulas; the gradient is exact for each variant:
//
//	art:  ∂l_t/∂ℓ_t = −c_t·A (c the clipped, stop-gradient weight)
//	ppo:  ∂l_t/∂ρ = −A when the unclipped branch is the minimum, else 0;
//	      token level ∂ρ_t/∂ℓ_t = ρ_t; sequence level ∂ρ_i/∂ℓ_s = ρ_i/n_i
//	KL:   ∂k_t/∂ℓ_t = 1 − exp(ℓ^ref_t − ℓ_t)
//
// each times the token's normalization weight (and β for KL).
func Loss(c Config, tk Tokens, tot Totals) (Terms, []float64, error) {
	T := len(tk.Logprob)
	if len(tk.Old) != T || len(tk.Item) != T {
		return Terms{}, nil, fmt.Errorf("grpo: %d logprobs, %d old logprobs, %d item indices", T, len(tk.Old), len(tk.Item))
	}
	if c.TIS > 0 && len(tk.Sampler) != T {
		return Terms{}, nil, fmt.Errorf("grpo: truncated IS needs %d sampler logprobs, got %d", T, len(tk.Sampler))
	}
	if c.Beta > 0 && len(tk.Ref) != T {
		return Terms{}, nil, fmt.Errorf("grpo: KL needs %d reference logprobs, got %d", T, len(tk.Ref))
	}
	if len(tk.ItemTokens) != len(tk.Adv) {
		return Terms{}, nil, fmt.Errorf("grpo: %d advantages for %d trajectories", len(tk.Adv), len(tk.ItemTokens))
	}
	if tot.Items <= 0 || tot.Tokens <= 0 {
		return Terms{}, nil, fmt.Errorf("grpo: step totals %+v must be positive", tot)
	}
	I := len(tk.Adv)
	for _, it := range tk.Item {
		if it < 0 || int(it) >= I {
			return Terms{}, nil, fmt.Errorf("grpo: trajectory index %d outside [0, %d)", it, I)
		}
	}

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
		}
	}
	// Sequence-level (GSPO) ratios and, for ppo, Σ_t w_t·tis_t per trajectory.
	var seqRatio []float64
	if c.Level == "sequence" {
		seqRatio = make([]float64, I)
		cnt := make([]int, I)
		for t, it := range tk.Item {
			seqRatio[it] += delta[t]
			cnt[it]++
		}
		for i := range seqRatio {
			if cnt[i] != tk.ItemTokens[i] {
				return Terms{}, nil, fmt.Errorf("grpo: trajectory %d has %d of its %d tokens in this batch; sequence-level ratios need all", i, cnt[i], tk.ItemTokens[i])
			}
			seqRatio[i] = math.Exp(seqRatio[i] / float64(max(cnt[i], 1)))
		}
	}
	lo, hi := 1-c.Epsilon, 1+c.EpsilonHigh
	grad := make([]float64, T)
	seqGrad := make([]float64, I) // ppo, sequence level: Σ_t w·tis·∂l_t/∂ρ_i
	var terms Terms
	for t := range T {
		i := tk.Item[t]
		A := tk.Adv[i]
		rho := math.Exp(delta[t])
		if seqRatio != nil {
			rho = seqRatio[i]
		}
		tis := 1.0
		if c.TIS > 0 && !isNaN32(tk.Old[t]) && !isNaN32(tk.Sampler[t]) {
			tis = math.Min(math.Exp(float64(tk.Old[t])-float64(tk.Sampler[t])), c.TIS)
		}
		clipped := math.Min(math.Max(rho, lo), hi)
		var l, dl float64 // token loss and its derivative (w.r.t. ℓ_t for art, ρ for ppo)
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
		wt := w[i] * tis
		terms.Policy += wt * l
		switch {
		case c.Loss == "art":
			grad[t] += wt * dl
		case seqRatio != nil:
			seqGrad[i] += wt * dl
		default:
			grad[t] += wt * dl * rho
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
		for t, i := range tk.Item {
			grad[t] += seqGrad[i] * seqRatio[i] / float64(tk.ItemTokens[i])
		}
	}
	terms.Loss = terms.Policy + c.Beta*terms.KL
	return terms, grad, nil
}

func isNaN32(x float32) bool { return x != x }

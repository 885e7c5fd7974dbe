package grpo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

func TestAdvantages(t *testing.T) {
	r := [][]float64{{1, 0, 0, 1}, {0.3, 0.3, 0.3}, {2, 4}}
	// Group std of {1,0,0,1} is 0.5; of {2,4} is 1. Batch std of all nine rewards:
	all := []float64{1, 0, 0, 1, 0.3, 0.3, 0.3, 2, 4}
	_, bstd := meanStd(all)
	cases := map[Scale][][]float64{
		ScaleNone:  {{0.5, -0.5, -0.5, 0.5}, {0, 0, 0}, {-1, 1}},
		ScaleGroup: {{0.5 / (0.5 + 1e-6), -0.5 / (0.5 + 1e-6), -0.5 / (0.5 + 1e-6), 0.5 / (0.5 + 1e-6)}, {0, 0, 0}, {-1 / (1 + 1e-6), 1 / (1 + 1e-6)}},
		ScaleBatch: {{0.5 / (bstd + 1e-6), -0.5 / (bstd + 1e-6), -0.5 / (bstd + 1e-6), 0.5 / (bstd + 1e-6)}, {0, 0, 0}, {-1 / (bstd + 1e-6), 1 / (bstd + 1e-6)}},
	}
	for s, want := range cases {
		got := Advantages(r, s)
		for g := range want {
			sum := 0.0
			for i := range want[g] {
				if !near(got[g][i], want[g][i], 1e-12) {
					t.Errorf("%s: A[%d][%d] = %v, want %v", s, g, i, got[g][i], want[g][i])
				}
				sum += got[g][i]
			}
			if math.Abs(sum) > 1e-12 {
				t.Errorf("%s: group %d advantages sum to %v, want 0", s, g, sum)
			}
		}
		if got[1][0] != 0 || got[1][1] != 0 {
			t.Errorf("%s: equal-reward group must have exactly zero advantages, got %v", s, got[1])
		}
	}
	if _, err := ParseScale("zscore"); err == nil {
		t.Error("ParseScale accepted an unknown mode")
	}
}

// twoTokens is one trajectory of two tokens: ℓ = (−1, −2), ℓ^old = (−1.5, −2),
// so δ = (0.5, 0) and the token ratios are (e^0.5, 1).
func twoTokens(adv float64) Tokens {
	return Tokens{
		Logprob: []float32{-1, -2}, Old: []float32{-1.5, -2},
		Sampler: []float32{-1, -3}, Ref: []float32{-1.2, -2},
		Item: []int32{0, 0}, Adv: []float64{adv}, ItemTokens: []int{2},
	}
}

func TestLossHandComputed(t *testing.T) {
	e5 := math.Exp(0.5)
	type tc struct {
		name    string
		cfg     Config
		tk      Tokens
		tot     Totals
		policy  float64
		kl      float64
		grad    []float64
		clipped int
	}
	base := Config{Loss: "art", Epsilon: 0.2, EpsilonHigh: 0.28, Level: "token", Norm: "sequence"}
	with := func(f func(*Config)) Config { c := base; f(&c); return c }
	cases := []tc{
		// art: l = −clip(sg ρ)·A·ℓ; ρ1 = e^0.5 clipped to 1.28; w = 1/(1·2).
		{"art", base, twoTokens(2), Totals{1, 2},
			0.5 * (-1.28*2*-1 + -1*2*-2), 0, []float64{0.5 * -1.28 * 2, 0.5 * -2}, 1},
		// ppo, A>0: token 1 takes the clipped (constant) branch.
		{"ppo A>0", with(func(c *Config) { c.Loss = "ppo" }), twoTokens(2), Totals{1, 2},
			0.5 * (-1.28*2 - 2), 0, []float64{0, 0.5 * -2}, 1},
		// ppo, A<0: min(ρA, clip(ρ)A) = ρA for token 1 (−1.65 < −1.28): gradient −A·ρ·w.
		{"ppo A<0", with(func(c *Config) { c.Loss = "ppo" }), twoTokens(-1), Totals{1, 2},
			0.5 * (e5 + 1), 0, []float64{0.5 * e5, 0.5}, 0},
		// DAPO clip-higher: ε_high = 0.7 leaves e^0.5 = 1.6487 unclipped.
		{"ppo clip-higher", with(func(c *Config) { c.Loss = "ppo"; c.EpsilonHigh = 0.7 }), twoTokens(2), Totals{1, 2},
			0.5 * (-e5*2 - 2), 0, []float64{0.5 * -2 * e5, 0.5 * -2}, 0},
		// GSPO: ρ = exp((0.5+0)/2) = 1.2840 < 1.3; ∂/∂ℓ_s = Σ_t w·(−A)·ρ/n.
		{"ppo sequence", with(func(c *Config) { c.Loss = "ppo"; c.Level = "sequence"; c.EpsilonHigh = 0.3 }), twoTokens(2), Totals{1, 2},
			-2 * math.Exp(0.25), 0, []float64{-2 * math.Exp(0.25) / 2, -2 * math.Exp(0.25) / 2}, 0},
		// art at sequence level: one weight exp(0.25) clipped to 1.28 for both tokens.
		{"art sequence", with(func(c *Config) { c.Level = "sequence" }), twoTokens(2), Totals{1, 2},
			0.5 * (-1.28*2*-1 + -1.28*2*-2), 0, []float64{0.5 * -1.28 * 2, 0.5 * -1.28 * 2}, 2},
		// KL (k3): k1 = e^−0.2 + 0.2 − 1, k2 = 0; gradient β·w·(1 − e^(ref−ℓ)).
		{"art + kl", with(func(c *Config) { c.Beta = 0.1 }), twoTokens(2), Totals{1, 2},
			0.5 * (-1.28*2*-1 + -1*2*-2), 0.5 * (math.Exp(-0.2) + 0.2 - 1),
			[]float64{0.5*-1.28*2 + 0.1*0.5*(1-math.Exp(-0.2)), 0.5 * -2}, 1},
		// TIS: weights min(e^(old−sampler), 2) = (e^−0.5, 2).
		{"art + tis", with(func(c *Config) { c.TIS = 2 }), twoTokens(2), Totals{1, 2},
			0.5 * (math.Exp(-0.5)*(-1.28*2*-1) + 2*(-1*2*-2)), 0,
			[]float64{0.5 * math.Exp(-0.5) * -1.28 * 2, 0.5 * 2 * -2}, 1},
		// Token normalization over a step of 5 tokens; constant: 1/(I·L) = 1/(3·4).
		{"art tokens", with(func(c *Config) { c.Norm = "tokens" }), twoTokens(2), Totals{3, 5},
			(-1.28*2*-1 + -1*2*-2) / 5, 0, []float64{-1.28 * 2 / 5, -2.0 / 5}, 1},
		{"art constant", with(func(c *Config) { c.Norm = "constant"; c.NormConstant = 4 }), twoTokens(2), Totals{3, 5},
			(-1.28*2*-1 + -1*2*-2) / 12, 0, []float64{-1.28 * 2 / 12, -2.0 / 12}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			terms, grad, err := Loss(c.cfg, c.tk, c.tot)
			if err != nil {
				t.Fatal(err)
			}
			if !near(terms.Policy, c.policy, 1e-6) || !near(terms.KL, c.kl, 1e-6) {
				t.Errorf("policy %v kl %v, want %v %v", terms.Policy, terms.KL, c.policy, c.kl)
			}
			if !near(terms.Loss, c.policy+c.cfg.Beta*c.kl, 1e-6) {
				t.Errorf("loss %v, want %v", terms.Loss, c.policy+c.cfg.Beta*c.kl)
			}
			for i := range grad {
				if !near(grad[i], c.grad[i], 1e-6) {
					t.Errorf("dL/dℓ[%d] = %v, want %v", i, grad[i], c.grad[i])
				}
			}
			if terms.Clipped != c.clipped {
				t.Errorf("clipped %d, want %d", terms.Clipped, c.clipped)
			}
		})
	}
}

// TestLossGradientFiniteDifferences checks the analytic dL/dℓ of every
// differentiable variant (ppo token and sequence, KL, all norms) against
// central differences of Loss, on random tokens with a wide clip range so
// that no ratio sits on a kink.
func TestLossGradientFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, level := range []string{"token", "sequence"} {
		for _, norm := range []string{"sequence", "tokens", "constant"} {
			for _, beta := range []float64{0, 0.3} {
				name := fmt.Sprintf("level=%s,norm=%s,beta=%v", level, norm, beta)
				t.Run(name, func(t *testing.T) {
					cfg := Config{Loss: "ppo", Epsilon: 0.9, EpsilonHigh: 5, Level: level, Norm: norm, NormConstant: 7, Beta: beta}
					n := []int{1, 3, 5}
					var tk Tokens
					for i, k := range n {
						tk.Adv = append(tk.Adv, rng.NormFloat64())
						tk.ItemTokens = append(tk.ItemTokens, k)
						for range k {
							lp := float32(-rng.Float64() * 3)
							tk.Logprob = append(tk.Logprob, lp)
							tk.Old = append(tk.Old, lp+float32(0.3*rng.NormFloat64()))
							tk.Ref = append(tk.Ref, lp+float32(0.5*rng.NormFloat64()))
							tk.Item = append(tk.Item, int32(i))
						}
					}
					tk.Old[2] = float32(math.NaN()) // unknown: on-policy
					tot := Totals{Items: 3, Tokens: 9}
					_, grad, err := Loss(cfg, tk, tot)
					if err != nil {
						t.Fatal(err)
					}
					for j := range tk.Logprob {
						f := func(d float32) float64 {
							c := tk
							c.Logprob = append([]float32(nil), tk.Logprob...)
							c.Logprob[j] += d
							if j == 2 { // NaN old means sg(ℓ): hold it at the unperturbed ℓ
								c.Old = append([]float32(nil), tk.Old...)
								c.Old[j] = tk.Logprob[j]
							}
							terms, _, _ := Loss(cfg, c, tot)
							return terms.Loss
						}
						const h = 1e-3
						fd := (f(h) - f(-h)) / (2 * h)
						if !near(grad[j], fd, 2e-3) {
							t.Errorf("token %d: analytic %v, finite difference %v", j, grad[j], fd)
						}
					}
				})
			}
		}
	}
}

func TestLossRejectsBadInput(t *testing.T) {
	c := DefaultConfig()
	tk := twoTokens(1)
	tk.Item = []int32{0, 3}
	if _, _, err := Loss(c, tk, Totals{1, 2}); err == nil {
		t.Error("out-of-range trajectory index accepted")
	}
	if _, _, err := Loss(c, twoTokens(1), Totals{}); err == nil {
		t.Error("zero totals accepted")
	}
	c.Beta = 1
	tk = twoTokens(1)
	tk.Ref = nil
	if _, _, err := Loss(c, tk, Totals{1, 2}); err == nil {
		t.Error("KL without reference logprobs accepted")
	}
	for _, bad := range []Config{{Loss: "x", Level: "token", Norm: "tokens"}, {Loss: "art", Level: "x", Norm: "tokens"}, {Loss: "art", Level: "token", Norm: "constant"}} {
		if bad.Validate() == nil {
			t.Errorf("config %+v validated", bad)
		}
	}
}

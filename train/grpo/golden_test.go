package grpo

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"testing"
)

const rerun = "rerun: /usr/bin/python3 train/grpo/testdata/golden/make_golden.py (needs torch)"

type goldenFile struct {
	Lengths []int      `json:"lengths"`
	Logprob []float64  `json:"logprob"`
	Old     []*float64 `json:"old"` // null: unknown
	Sampler []float64  `json:"sampler"`
	Ref     []float64  `json:"ref"`
	Adv     []float64  `json:"adv"`
	// HistLengths splits each trajectory's tokens into histories; Weight
	// is ART's per-trajectory weight (norm art).
	HistLengths [][]int   `json:"hist_lengths"`
	Weight      []float64 `json:"weight"`
	Cases       []struct {
		Name   string    `json:"name"`
		Config Config    `json:"config"`
		Policy float64   `json:"policy"`
		KL     float64   `json:"kl"`
		Loss   float64   `json:"loss"`
		KLRef  float64   `json:"kl_ref"` // ART's kl_policy_ref: the mean KL the penalty shifts by
		Grad   []float64 `json:"grad"`
	} `json:"cases"`
}

// TestLossMatchesPyTorch compares Loss and its gradient with an independent
// PyTorch implementation differentiated by autograd (golden.json), for
// every variant the script lists: Hone's own and ART's knobs (levels
// average and geometric_average, per-history ratios, the ratio cap and
// mask, Kimi's τ, TIS against the sampler, the per-row norm, the KL
// penalty's advantage shift from the current or the sampled logprobs).
func TestLossMatchesPyTorch(t *testing.T) {
	raw, err := os.ReadFile("testdata/golden/golden.json")
	if err != nil {
		t.Fatalf("%v (%s)", err, rerun)
	}
	var prov struct {
		SHA256 map[string]string `json:"sha256"`
	}
	pb, err := os.ReadFile("testdata/golden/provenance.json")
	if err != nil || json.Unmarshal(pb, &prov) != nil {
		t.Fatalf("provenance.json: %v (%s)", err, rerun)
	}
	sum := sha256.Sum256(raw)
	if hex.EncodeToString(sum[:]) != prov.SHA256["golden.json"] {
		t.Fatalf("golden.json does not match its checksum in provenance.json (%s)", rerun)
	}
	var g goldenFile
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatalf("%v (%s)", err, rerun)
	}
	var tk Tokens
	for i, n := range g.Lengths {
		tk.Adv = append(tk.Adv, g.Adv[i])
		tk.ItemTokens = append(tk.ItemTokens, n)
		for range n {
			tk.Item = append(tk.Item, int32(i))
		}
	}
	f32 := func(xs []float64) []float32 {
		out := make([]float32, len(xs))
		for i, x := range xs {
			out[i] = float32(x)
		}
		return out
	}
	if len(g.HistLengths) != len(g.Lengths) {
		t.Fatalf("golden has %d history splits for %d trajectories (%s)", len(g.HistLengths), len(g.Lengths), rerun)
	}
	for i, hl := range g.HistLengths {
		sum := 0
		for _, n := range hl {
			for range n {
				tk.Hist = append(tk.Hist, int32(len(tk.HistTokens)))
			}
			tk.HistTokens = append(tk.HistTokens, n)
			sum += n
		}
		if sum != g.Lengths[i] {
			t.Fatalf("trajectory %d: histories of %v tokens, want %d (%s)", i, hl, g.Lengths[i], rerun)
		}
	}
	tk.Weight = g.Weight
	tk.Logprob, tk.Sampler, tk.Ref = f32(g.Logprob), f32(g.Sampler), f32(g.Ref)
	for _, o := range g.Old {
		if o == nil {
			tk.Old = append(tk.Old, float32(math.NaN()))
		} else {
			tk.Old = append(tk.Old, float32(*o))
		}
	}
	tot := Totals{Items: len(g.Lengths), Tokens: len(tk.Item)}
	if len(g.Cases) < 30 {
		t.Fatalf("golden has %d cases (%s)", len(g.Cases), rerun)
	}
	clipped, masked := 0, 0
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			terms, grad, err := Loss(c.Config, tk, tot)
			if err != nil {
				t.Fatal(err)
			}
			clipped += terms.Clipped
			masked += terms.Masked
			t.Logf("%d of %d tokens clipped, %d capped or masked", terms.Clipped, terms.Tokens, terms.Masked)
			const tol = 1e-9
			if !near(terms.Policy, c.Policy, tol) || !near(terms.KL, c.KL, tol) || !near(terms.Loss, c.Loss, tol) || !near(terms.KLRef, c.KLRef, tol) {
				t.Errorf("policy %v kl %v loss %v kl_policy_ref %v; PyTorch %v %v %v %v (%s)",
					terms.Policy, terms.KL, terms.Loss, terms.KLRef, c.Policy, c.KL, c.Loss, c.KLRef, rerun)
			}
			for i := range grad {
				if !near(grad[i], c.Grad[i], tol) {
					t.Errorf("dL/dℓ[%d] = %v, PyTorch %v (%s)", i, grad[i], c.Grad[i], rerun)
				}
			}
		})
	}
	if clipped == 0 {
		t.Errorf("no case clips a ratio; the golden inputs do not exercise clipping (%s)", rerun)
	}
	if masked == 0 {
		t.Errorf("no case caps or masks a ratio; the golden inputs do not exercise them (%s)", rerun)
	}
}

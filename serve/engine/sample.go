package engine

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Params are the sampling settings of one request (OpenAI's names).
type Params struct {
	Temperature      float64 // 0: greedy
	TopP             float64 // 0 or 1: off
	TopK             int     // 0 or less: off
	PresencePenalty  float64
	FrequencyPenalty float64
	MaxTokens        int      // generated tokens at most (> 0, or 0 for an echo-only completion)
	Stop             []string // stop strings; the text before the first match is returned
	StopIDs          []int32  // extra stop token ids (the model's EOS ids always stop)
	IgnoreEOS        bool
	Seed             uint64
	HasSeed          bool // without it every sequence draws a fresh seed
	Logprobs         bool // report the chosen token's logprob
	TopLogprobs      int  // and this many alternatives
	SkipSpecial      bool // leave special tokens out of the text
}

// Constraint restricts which tokens may come next (constrained decoding).
// One value serves one sequence; the engine calls Mask before each choice
// and Accept after it.
type Constraint interface {
	// Mask sets logits[id] to -Inf for every token id that cannot come
	// next. It must leave at least one finite entry (an end-of-sequence
	// token once the output is complete).
	Mask(logits []float32)
	// Accept records that id was chosen.
	Accept(id int32) error
}

// TokenLogprob is one token's log-probability under the raw model.
type TokenLogprob struct {
	ID      int32
	Logprob float32
}

// sampler picks tokens for one sequence.
type sampler struct {
	p      Params
	rng    *rand.Rand
	counts map[int32]int // generated tokens, for penalties

	scratch []float32
	idx     []int32
}

func newSampler(p Params, choice int) *sampler {
	seed := p.Seed
	if !p.HasSeed {
		seed = rand.Uint64()
	}
	// The choice index is the PCG stream, so choice i of a request draws
	// the same numbers whatever batch it runs in.
	return &sampler{p: p, rng: rand.New(rand.NewPCG(seed, uint64(choice)+0x9e3779b97f4a7c15)), counts: map[int32]int{}}
}

// LogSoftmax returns log p of every entry of x (in a new slice).
func LogSoftmax(x []float32) []float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		m = max(m, v)
	}
	var s float64
	for _, v := range x {
		s += math.Exp(float64(v - m))
	}
	lse := m + float32(math.Log(s))
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = v - lse
	}
	return out
}

// TopN returns the n largest entries of lp, best first (ties: lower id).
func TopN(lp []float32, n int) []TokenLogprob {
	if n <= 0 {
		return nil
	}
	n = min(n, len(lp))
	out := make([]TokenLogprob, 0, n+1)
	for i, v := range lp {
		if len(out) == n && v <= out[n-1].Logprob {
			continue
		}
		j := len(out)
		if j < n {
			out = append(out, TokenLogprob{})
		} else {
			j = n - 1
		}
		for j > 0 && out[j-1].Logprob < v {
			out[j] = out[j-1]
			j--
		}
		out[j] = TokenLogprob{ID: int32(i), Logprob: v}
	}
	return out
}

// pick chooses the next token from the raw logits row (which it may modify)
// and returns it with its raw-model logprob and the top alternatives.
func (s *sampler) pick(row []float32, c Constraint) (id int32, lp float32, top []TokenLogprob) {
	var raw []float32
	if s.p.Logprobs {
		raw = LogSoftmax(row)
	}
	for t, n := range s.counts {
		row[t] -= float32(s.p.FrequencyPenalty*float64(n) + s.p.PresencePenalty)
	}
	if c != nil {
		c.Mask(row)
	}
	id = s.choose(row)
	s.counts[id]++
	if raw != nil {
		lp = raw[id]
		top = TopN(raw, s.p.TopLogprobs)
	}
	return id, lp, top
}

// choose draws from softmax(row/T) restricted by top_k and top_p; T = 0 is
// argmax. Exactly one uniform draw per call keeps streams aligned.
func (s *sampler) choose(row []float32) int32 {
	if s.p.Temperature <= 1e-6 {
		best := 0
		for i, v := range row {
			if v > row[best] {
				best = i
			}
		}
		return int32(best)
	}
	u := s.rng.Float64()
	inv := float32(1 / s.p.Temperature)
	k := s.p.TopK
	topP := s.p.TopP
	if k <= 0 && (topP <= 0 || topP >= 1) {
		// Plain sampling over the whole vocabulary: no sort needed.
		m := float32(math.Inf(-1))
		for _, v := range row {
			m = max(m, v)
		}
		var sum float64
		for i, v := range row {
			e := math.Exp(float64((v - m) * inv))
			row[i] = float32(e)
			sum += e
		}
		target, acc := u*sum, 0.0
		last := 0
		for i, e := range row {
			if e == 0 {
				continue
			}
			last = i
			acc += float64(e)
			if acc > target {
				return int32(i)
			}
		}
		return int32(last)
	}
	// Candidates sorted by logit, best first (ties: lower id), cut to top_k.
	s.idx = s.idx[:0]
	for i, v := range row {
		if !math.IsInf(float64(v), -1) {
			s.idx = append(s.idx, int32(i))
		}
	}
	slices.SortFunc(s.idx, func(a, b int32) int {
		switch {
		case row[a] > row[b]:
			return -1
		case row[a] < row[b]:
			return 1
		}
		return int(a - b)
	})
	if k > 0 && k < len(s.idx) {
		s.idx = s.idx[:k]
	}
	if len(s.idx) == 0 {
		return 0
	}
	m := row[s.idx[0]]
	s.scratch = s.scratch[:0]
	var sum float64
	for _, i := range s.idx {
		e := math.Exp(float64((row[i] - m) * inv))
		s.scratch = append(s.scratch, float32(e))
		sum += e
	}
	if topP > 0 && topP < 1 {
		// Keep the smallest prefix whose mass reaches top_p.
		acc := 0.0
		for j, e := range s.scratch {
			acc += float64(e) / sum
			if acc >= topP {
				s.scratch, s.idx = s.scratch[:j+1], s.idx[:j+1]
				break
			}
		}
		sum = 0
		for _, e := range s.scratch {
			sum += float64(e)
		}
	}
	target, acc := u*sum, 0.0
	for j, e := range s.scratch {
		acc += float64(e)
		if acc > target {
			return s.idx[j]
		}
	}
	return s.idx[len(s.idx)-1]
}

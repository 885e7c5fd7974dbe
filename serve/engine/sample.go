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
	blocks  []float64
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
	if k >= len(row) {
		k = 0
	}
	switch {
	case k <= 0 && (topP <= 0 || topP >= 1):
		return s.sampleAll(row, inv, u)
	case k <= 0:
		return s.sampleNucleus(row, topP, inv, u)
	}
	s.idx = s.candidates(row, k)
	if len(s.idx) == 0 {
		return 0
	}
	m := row[s.idx[0]]
	s.scratch = s.scratch[:0]
	var sum float64
	for _, i := range s.idx {
		e := exp32((row[i] - m) * inv)
		s.scratch = append(s.scratch, e)
		sum += float64(e)
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

// sampleBlock is the number of logits whose probability mass sampleAll
// sums together, so that finding the drawn token scans one block instead
// of half the vocabulary.
const sampleBlock = 512

// sampleAll draws from softmax(row·inv) over the whole row (overwriting it
// with the unnormalised probabilities), with u uniform in [0, 1).
func (s *sampler) sampleAll(row []float32, inv float32, u float64) int32 {
	m := float32(math.Inf(-1))
	for _, v := range row {
		m = max(m, v)
	}
	if math.IsInf(float64(m), -1) {
		return 0 // every token masked; a constraint must leave one
	}
	s.blocks = s.blocks[:0]
	var sum float64
	for lo := 0; lo < len(row); lo += sampleBlock {
		blk := row[lo:min(lo+sampleBlock, len(row))]
		var bs float64
		for i, v := range blk {
			e := exp32((v - m) * inv)
			blk[i] = e
			bs += float64(e)
		}
		s.blocks = append(s.blocks, bs)
		sum += bs
	}
	target, acc := u*sum, 0.0
	last := -1
	for b, bs := range s.blocks {
		if acc+bs <= target {
			acc += bs
			continue
		}
		// The draw falls in this block (up to rounding: the scan's sum
		// may fall short of the block's, then the next block goes on).
		lo := b * sampleBlock
		for i, e := range row[lo:min(lo+sampleBlock, len(row))] {
			if e == 0 {
				continue
			}
			last = lo + i
			acc += float64(e)
			if acc > target {
				return int32(last)
			}
		}
	}
	if last < 0 { // rounding pushed the target past the last block
		for i := len(row) - 1; i >= 0; i-- {
			if row[i] != 0 {
				return int32(i)
			}
		}
	}
	return int32(max(last, 0))
}

// nucleusBuckets is how finely sampleNucleus ranks entries before sorting:
// buckets of 1/32 of a unit of scaled logit (a factor e^(1/32) of
// probability), down to 40 units below the best; the last bucket holds the
// rest.
const (
	nucleusPerUnit = 32
	nucleusBuckets = 40 * nucleusPerUnit
)

// sampleNucleus draws from softmax(row·inv) cut to the smallest prefix of
// the ranking (best first, ties: lower id) that holds top_p of the mass,
// without sorting the row: it sums the mass of logit buckets, takes every
// bucket above the one where the cumulative mass reaches top_p, and sorts
// only that bucket's entries to find the exact cut. The draw then scans the
// kept entries in id order.
func (s *sampler) sampleNucleus(row []float32, topP float64, inv float32, u float64) int32 {
	m := float32(math.Inf(-1))
	for _, v := range row {
		m = max(m, v)
	}
	if math.IsInf(float64(m), -1) {
		return 0
	}
	bucket := func(v float32) int {
		x := (m - v) * inv * nucleusPerUnit
		if !(x < nucleusBuckets) { // also -Inf logits
			return nucleusBuckets
		}
		return int(x)
	}
	s.scratch = slices.Grow(s.scratch[:0], len(row))[:len(row)]
	s.blocks = slices.Grow(s.blocks[:0], nucleusBuckets+1)[:nucleusBuckets+1]
	clear(s.blocks)
	var total float64
	for i, v := range row {
		e := exp32((v - m) * inv)
		s.scratch[i] = e
		s.blocks[bucket(v)] += float64(e)
		total += float64(e)
	}
	// Buckets above cut are wholly in the nucleus: their mass is short of
	// top_p.
	want := topP * total
	cut, acc := nucleusBuckets, 0.0
	for b, bm := range s.blocks {
		if acc+bm >= want {
			cut = b
			break
		}
		acc += bm
	}
	// Within the cut bucket, keep the best entries until the mass reaches
	// top_p; the last kept one bounds the nucleus.
	s.idx = s.idx[:0]
	for i, v := range row {
		if e := s.scratch[i]; e > 0 && bucket(v) == cut {
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
	lastV, lastID := float32(math.Inf(1)), int32(-1) // nothing kept from the cut bucket yet
	for _, i := range s.idx {
		lastV, lastID = row[i], i
		acc += float64(s.scratch[i])
		if acc >= want {
			break
		}
	}
	in := func(i int, v float32) bool {
		b := bucket(v)
		return b < cut || b == cut && (v > lastV || v == lastV && int32(i) <= lastID)
	}
	target, run := u*acc, 0.0
	last := -1
	for i, v := range row {
		e := s.scratch[i]
		if e == 0 || !in(i, v) {
			continue
		}
		last = i
		run += float64(e)
		if run > target {
			return int32(i)
		}
	}
	return int32(max(last, 0))
}

// candidates returns the ids of the unmasked entries of row, sorted best
// first (ties: lower id), cut to the k best (k > 0); with k well below the
// row's length only those are sorted (kept in a heap first).
func (s *sampler) candidates(row []float32, k int) []int32 {
	m := float32(math.Inf(-1))
	n := 0
	for _, v := range row {
		if !math.IsInf(float64(v), -1) {
			m = max(m, v)
			n++
		}
	}
	idx := s.idx[:0]
	if n == 0 {
		return idx
	}
	better := func(a, b int32) int {
		switch {
		case row[a] > row[b]:
			return -1
		case row[a] < row[b]:
			return 1
		}
		return int(a - b)
	}
	for i, v := range row {
		if !math.IsInf(float64(v), -1) {
			idx = append(idx, int32(i))
		}
	}
	if k > 0 && k < len(idx)/4 {
		// Keep the k best in a heap with the worst on top, then sort them.
		h := idx[:k]
		heapify(h, better)
		for _, i := range idx[k:] {
			if better(i, h[0]) < 0 {
				h[0] = i
				siftDown(h, 0, better)
			}
		}
		idx = h
	}
	slices.SortFunc(idx, better)
	if k > 0 && k < len(idx) {
		idx = idx[:k]
	}
	return idx
}

// heapify orders h as a heap whose root is the worst entry under better.
func heapify(h []int32, better func(a, b int32) int) {
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, i, better)
	}
}

func siftDown(h []int32, i int, better func(a, b int32) int) {
	for {
		w := i
		if l := 2*i + 1; l < len(h) && better(h[l], h[w]) > 0 {
			w = l
		}
		if r := 2*i + 2; r < len(h) && better(h[r], h[w]) > 0 {
			w = r
		}
		if w == i {
			return
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}

// exp32 is e^x in float32 (Cephes expf: range reduction by ln 2, then a
// degree-6 polynomial; within 2 ulp), several times cheaper than math.Exp
// in float64, which matters over a 151,936-token row per sequence per step.
// Arguments below -87.3 (and -Inf) give 0.
func exp32(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		c1    = 0.693359375
		c2    = -2.12194440e-4
	)
	switch {
	case x < -87.33:
		return 0
	case x > 88.72:
		return float32(math.Inf(1))
	}
	z := x*log2e + 0.5
	n := int32(z)
	if float32(n) > z {
		n-- // floor for negative z
	}
	fn := float32(n)
	r := x - fn*c1 - fn*c2
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	y := p*r*r + r + 1
	return y * math.Float32frombits(uint32(n+127)<<23)
}

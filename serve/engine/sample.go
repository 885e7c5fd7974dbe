package engine

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/hone-rl/hone/kernels"
)

// Params are the sampling settings of one request (OpenAI's names).
type Params struct {
	Temperature      float64 // below SamplingEps: greedy
	TopP             float64 // 0 or 1: off
	TopK             int     // 0 or less: off
	MinP             float64 // 0: off; else only tokens of probability (after temperature) at least MinP times the best one's (vLLM's min_p)
	PresencePenalty  float64
	FrequencyPenalty float64
	// RepetitionPenalty (vLLM's; 0 or 1: off) divides the positive logits
	// and multiplies the others of every token the prompt or the output
	// holds.
	RepetitionPenalty float64
	LogitBias         map[int32]float32 // added to the logits of these token ids before the choice (OpenAI's logit_bias)
	MaxTokens         int               // generated tokens at most (> 0, or 0 for an echo-only completion)
	MinTokens         int               // generated tokens before an end-of-sequence id, a StopIDs id or a stop string may end the sequence (vLLM's min_tokens)
	Stop              []string          // stop strings; the text before the first listed one found in a token's text is returned
	// IncludeStop keeps the stop string that ended the text in it, and a
	// stop token's text, whole: not searched for the stop strings (vLLM's
	// include_stop_str_in_output).
	IncludeStop bool
	StopIDs     []int32 // extra stop token ids (the model's EOS ids always stop)
	IgnoreEOS   bool
	Seed        uint64
	HasSeed     bool // without it every sequence draws a fresh seed
	Logprobs    bool // report the chosen token's logprob
	TopLogprobs int  // and this many alternatives
	SkipSpecial bool // leave special tokens out of the text
}

// SamplingEps is vLLM's _SAMPLING_EPS: a temperature below it is greedy,
// as vLLM's SamplingParams.sampling_type decides, so that a request sent
// to either server with the same tiny temperature is answered the same way.
const SamplingEps = 1e-5

// greedy reports whether p's choice is the argmax.
func (p *Params) greedy() bool {
	return p.Temperature < SamplingEps
}

// repeats reports whether p has a repetition penalty.
func (p *Params) repeats() bool {
	return p.RepetitionPenalty > 0 && p.RepetitionPenalty != 1
}

// Constraint restricts which tokens may come next (constrained decoding).
// One value serves one sequence; the engine calls Mask before each choice
// and Accept after it.
type Constraint interface {
	// Mask sets logits[id] to -Inf for every token id that cannot come
	// next. It must leave at least one finite entry (an end-of-sequence
	// token once the output is complete); a row left with none ends the
	// sequence with ErrNoCandidate (a NoCandidateError, Constrained unless
	// a NaN the mask left shows the model at fault).
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
	be     kernels.Backend // its row ops (RowMax, ExpShift) turn logits into probabilities
	p      Params
	rng    *rand.Rand
	counts map[int32]int // generated tokens, for penalties
	made   int           // tokens chosen so far
	// ban are the ids that would end the sequence (the model's
	// end-of-sequence ids, under IgnoreEOS too as in vLLM, and StopIDs),
	// kept out of the choice while fewer than Params.MinTokens tokens are
	// made; set by the engine, which knows the model's ids.
	ban []int32
	// seen holds the prompt's and the output's token ids, for
	// RepetitionPenalty (nil without it); set by the engine, which has the
	// prompt.
	seen map[int32]bool

	scratch []float32
	idx     []int32
	blocks  []float64
	raw     []float32 // the row's raw logits, when logprobs are asked for
	bucket  []uint16  // sampleNucleus: each entry's logit bucket
}

func newSampler(be kernels.Backend, p Params, choice int) *sampler {
	seed := p.Seed
	if !p.HasSeed {
		seed = rand.Uint64()
	}
	// The choice index is the PCG stream, so choice i of a request draws
	// the same numbers whatever batch it runs in.
	return &sampler{be: be, p: p, rng: rand.New(rand.NewPCG(seed, uint64(choice)+0x9e3779b97f4a7c15)), counts: map[int32]int{}}
}

// LogSoftmax returns log p of every entry of x (in a new slice), with be's
// row ops.
func LogSoftmax(be kernels.Backend, x []float32) []float32 {
	return logSoftmaxInto(be, make([]float32, len(x)), x)
}

// logSoftmaxInto writes log p of every entry of x into dst (which must
// hold len(x) values) and returns dst[:len(x)]. A row of −Inf is copied.
// Entries that are not finite follow kernels.RowChooser's rule: NaN gives
// −Inf, +Inf gives 0 (kernels.ChoiceLogprob).
func logSoftmaxInto(be kernels.Backend, dst, x []float32) []float32 {
	dst = dst[:len(x)]
	lse := logSumExp(be, x)
	for i, v := range x {
		if v != v {
			v = float32(math.Inf(-1))
		}
		dst[i] = kernels.ChoiceLogprob(v, lse)
	}
	return dst
}

// logSumExp returns log Σ e^x over the entries of x that are not NaN, or 0
// when x has none above −Inf (so that x − logSumExp(x) leaves such a row as
// it is), or +Inf when one is +Inf (kernels.RowChooser's rule, whose
// kernels.ChoiceLogprob gives such an entry logprob 0). The exponentials go
// through the backend's row pass (kernels.Backend.ExpShift), which only
// sums them here (float32 values, summed in float64): on the CPU backend's
// vectorised code, over a 151,936-token row, that is some 20 times faster
// than math.Exp one value at a time, and it runs for every sequence at every
// step when a client asks for logprobs, as RL rollouts do.
func logSumExp(be kernels.Backend, x []float32) float32 {
	m := be.RowMax(x) // NaN passed over
	switch {
	case math.IsInf(float64(m), -1):
		return 0
	case math.IsInf(float64(m), 1):
		return m
	}
	sum := be.ExpShift(nil, x, m, 1)
	if math.IsNaN(sum) { // a NaN entry, whose exponential the backend gave as NaN
		sum = 0
		for lo := 0; lo < len(x); {
			hi := lo
			for hi < len(x) && !math.IsNaN(float64(x[hi])) {
				hi++
			}
			sum += be.ExpShift(nil, x[lo:hi], m, 1)
			lo = hi + 1
		}
	}
	return m + float32(math.Log(sum))
}

// TopN returns the n largest entries of lp, best first (ties: lower id),
// NaN entries left out.
func TopN(lp []float32, n int) []TokenLogprob {
	if n <= 0 {
		return nil
	}
	n = min(n, len(lp))
	out := make([]TokenLogprob, 0, n+1)
	for i, v := range lp {
		// NaN is left out, tested after the common case: first, the test
		// tripled TopN's time over a 151,936-entry row.
		if len(out) == n && v <= out[n-1].Logprob || v != v {
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
// and returns it with its raw-model logprob and the top alternatives; or
// id −1 when the row has no candidate (kernels.RowChooser's rule: every
// entry NaN or −Inf once masked and penalised), which the engine reports
// as the sequence's error (ErrNoCandidate).
func (s *sampler) pick(row []float32, c Constraint) (id int32, lp float32, top []TokenLogprob) {
	// For logprobs it keeps a copy of the raw logits (the choice overwrites
	// row) and their log-sum-exp, and subtracts only for the tokens it
	// reports, rather than writing the log-softmax of the whole row: on a
	// 151,936-entry row at temperature 1 that took a pick from 0.19 to
	// 0.13–0.15 ms, against 0.07–0.09 ms without logprobs.
	var lse float32
	if s.p.Logprobs {
		s.raw = append(s.raw[:0], row...)
		lse = logSumExp(s.be, row)
	}
	// The bias moves the choice, not the logprobs reported, which stay the
	// raw model's (as the penalties do): what training compares against.
	// It comes before the penalties, as in vLLM: the repetition penalty
	// scales the biased logit.
	for t, b := range s.p.LogitBias {
		row[t] += b
	}
	if rp := float32(s.p.RepetitionPenalty); s.seen != nil {
		for t := range s.seen {
			if row[t] > 0 {
				row[t] /= rp
			} else {
				row[t] *= rp
			}
		}
	}
	for t, n := range s.counts {
		row[t] -= float32(s.p.FrequencyPenalty*float64(n) + s.p.PresencePenalty)
	}
	if s.made < s.p.MinTokens {
		for _, t := range s.ban {
			row[t] = float32(math.Inf(-1))
		}
	}
	if c != nil {
		c.Mask(row)
	}
	if s.p.MinP > 0 && !s.p.greedy() {
		s.cutMinP(row)
	}
	id = s.choose(row)
	if id < 0 {
		return id, 0, nil
	}
	s.counts[id]++
	s.made++
	if s.seen != nil {
		s.seen[id] = true
	}
	if s.p.Logprobs {
		lp = kernels.ChoiceLogprob(s.raw[id], lse)
		// Ranking the raw logits ranks the logprobs (up to entries whose
		// logprobs round to the same float32).
		top = TopN(s.raw, s.p.TopLogprobs)
		for i := range top {
			top[i].Logprob = kernels.ChoiceLogprob(top[i].Logprob, lse)
		}
	}
	return id, lp, top
}

// cutMinP sets to −Inf the entries of row whose probability at the
// sampler's temperature is below MinP times the best entry's, as vLLM's
// min_p does after temperature and before top_k and top_p: p_i ≥ MinP·p_max
// is (x_i − x_max)/T ≥ ln MinP. A row whose best entry is not finite is
// left to choose's rule.
func (s *sampler) cutMinP(row []float32) {
	m := s.be.RowMax(row) // NaN passed over
	if math.IsInf(float64(m), 0) {
		return
	}
	floor := m + float32(s.p.Temperature*math.Log(s.p.MinP))
	ninf := float32(math.Inf(-1))
	for i, v := range row {
		if v < floor {
			row[i] = ninf
		}
	}
}

// deviceInv reports whether a kernels.RowChooser can make this sampler's
// choice with constraint c over V tokens, and the inverse temperature it
// takes (0: greedy). It can when nothing but the row's own distribution
// decides: no constraint, no penalties (repetition included), no logit
// bias, no min_tokens, no
// top_logprobs; and either greedy
// (choose ignores top_k and top_p then) or sampling with neither top_k
// (or top_k ≥ V, which choose ignores) nor top_p nor min_p. The answer is the same
// at every step of a sequence.
func (s *sampler) deviceInv(c Constraint, V int) (float32, bool) {
	p := &s.p
	if c != nil || p.FrequencyPenalty != 0 || p.PresencePenalty != 0 || p.repeats() || len(p.LogitBias) > 0 || p.MinTokens > 0 || p.Logprobs && p.TopLogprobs > 0 {
		return 0, false
	}
	if p.greedy() {
		return 0, true
	}
	if p.TopK > 0 && p.TopK < V || p.TopP > 0 && p.TopP < 1 || p.MinP > 0 {
		return 0, false
	}
	inv := float32(1 / p.Temperature) // as choose forms it
	return inv, inv > 0 && !math.IsInf(float64(inv), 1)
}

// deviceU is the uniform a device choice at inverse temperature inv
// takes: one draw of the sequence's stream for a sampled choice, none for
// greedy, as choose draws, so that a sequence's stream stays where the
// host's sampler would leave it.
func (s *sampler) deviceU(inv float32) float64 {
	if inv == 0 {
		return 0
	}
	return s.rng.Float64()
}

// fromDevice is pick's result from the backend's choice: the token, and
// its raw-model logprob when asked for (the row's logit less its
// log-sum-exp, as pick subtracts them: RowChoice.Logprob); id −1 for a
// row with no candidate, as pick.
func (s *sampler) fromDevice(c kernels.RowChoice) picked {
	if c.ID < 0 {
		return picked{id: -1}
	}
	s.counts[c.ID]++
	s.made++
	if s.seen != nil {
		s.seen[c.ID] = true
	}
	pk := picked{id: c.ID}
	if s.p.Logprobs {
		pk.lp = c.Logprob()
	}
	return pk
}

// choose draws from softmax(row/T) restricted by top_k and top_p; T = 0 is
// argmax. Exactly one uniform draw per call keeps streams aligned. Rows
// that are not finite follow kernels.RowChooser's rule, as a device's
// choice does: NaN entries are never chosen and have no probability; a
// row holding +Inf gives its first +Inf; a row with no candidate (every
// entry NaN or −Inf) gives −1.
func (s *sampler) choose(row []float32) int32 {
	if s.p.greedy() {
		best, bv := -1, float32(math.Inf(-1))
		for i, v := range row {
			if v > bv { // never for NaN
				best, bv = i, v
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
		return -1
	}
	m := row[s.idx[0]]
	if math.IsInf(float64(m), 1) {
		return s.idx[0] // the lowest id holding +Inf: candidates ranks ties by id
	}
	s.scratch = s.scratch[:0]
	for _, i := range s.idx {
		s.scratch = append(s.scratch, row[i])
	}
	sum := s.be.ExpShift(s.scratch, s.scratch, m, inv)
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
	m := s.be.RowMax(row) // NaN passed over
	switch {
	case math.IsInf(float64(m), -1):
		return -1 // no candidate (a constraint must leave one)
	case math.IsInf(float64(m), 1):
		return firstPosInf(row)
	}
	s.blocks = s.blocks[:0]
	var sum float64
	for lo := 0; lo < len(row); lo += sampleBlock {
		blk := row[lo:min(lo+sampleBlock, len(row))]
		bs := s.be.ExpShift(blk, blk, m, inv)
		if math.IsNaN(bs) {
			bs = zeroNaN(blk)
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
	noBucket       = math.MaxUint16 // an entry of probability 0
)

// sampleNucleus draws from softmax(row·inv) cut to the smallest prefix of
// the ranking (best first, ties: lower id) that holds top_p of the mass,
// without sorting the row: it sums the mass of logit buckets, takes every
// bucket above the one where the cumulative mass reaches top_p, and sorts
// only that bucket's entries to find the exact cut. The draw then scans the
// kept entries in id order.
func (s *sampler) sampleNucleus(row []float32, topP float64, inv float32, u float64) int32 {
	m := s.be.RowMax(row) // NaN passed over
	switch {
	case math.IsInf(float64(m), -1):
		return -1
	case math.IsInf(float64(m), 1):
		return firstPosInf(row)
	}
	s.scratch = slices.Grow(s.scratch[:0], len(row))[:len(row)]
	s.bucket = slices.Grow(s.bucket[:0], len(row))[:len(row)]
	s.blocks = slices.Grow(s.blocks[:0], nucleusBuckets+1)[:nucleusBuckets+1]
	clear(s.blocks)
	total := s.be.ExpShift(s.scratch, row, m, inv)
	if math.IsNaN(total) {
		total = zeroNaN(s.scratch)
	}
	// Each entry's bucket, computed once: noBucket for the ones of zero
	// probability (masked, or beyond float32's range), which no draw takes.
	scale := inv * nucleusPerUnit
	for i, e := range s.scratch {
		b := uint16(noBucket)
		if e != 0 {
			b = nucleusBuckets
			if x := (m - row[i]) * scale; x < nucleusBuckets {
				b = uint16(x)
			}
			s.blocks[b] += float64(e)
		}
		s.bucket[i] = b
	}
	// Buckets above cut are wholly in the nucleus: their mass is short of
	// top_p.
	want := topP * total
	cut, acc := uint16(nucleusBuckets), 0.0
	for b, bm := range s.blocks {
		if acc+bm >= want {
			cut = uint16(b)
			break
		}
		acc += bm
	}
	// Within the cut bucket, keep the best entries until the mass reaches
	// top_p; the last kept one bounds the nucleus.
	s.idx = s.idx[:0]
	for i, b := range s.bucket {
		if b == cut {
			s.idx = append(s.idx, int32(i))
		}
	}
	slices.SortFunc(s.idx, byLogit(row))
	lastV, lastID := float32(math.Inf(1)), int32(-1) // nothing kept from the cut bucket yet
	for _, i := range s.idx {
		lastV, lastID = row[i], i
		acc += float64(s.scratch[i])
		if acc >= want {
			break
		}
	}
	target, run := u*acc, 0.0
	last := -1
	for i, b := range s.bucket {
		if b > cut || b == cut && !(row[i] > lastV || row[i] == lastV && int32(i) <= lastID) {
			continue
		}
		last = i
		run += float64(s.scratch[i])
		if run > target {
			return int32(i)
		}
	}
	return int32(max(last, 0))
}

// firstPosInf returns the lowest id of row holding +Inf, the choice of a
// row whose max is +Inf (kernels.RowChooser's rule).
func firstPosInf(row []float32) int32 {
	for i, v := range row {
		if math.IsInf(float64(v), 1) {
			return int32(i)
		}
	}
	panic("engine: firstPosInf: no +Inf in the row")
}

// zeroNaN sets the NaN values of e (the exponentials ExpShift gave a NaN
// logit, on a backend whose exponential lets NaN through) to 0, the
// probability kernels.RowChooser's rule gives a NaN entry, and returns
// the sum of e in float64. The other values are right: RowMax, their
// shift, passed over the NaN entries.
func zeroNaN(e []float32) float64 {
	sum := 0.0
	for i, v := range e {
		if v != v {
			e[i] = 0
		}
		sum += float64(e[i])
	}
	return sum
}

// byLogit orders token ids by their logit in row, best first, ties to the
// lower id: the ranking top_k and top_p cut.
func byLogit(row []float32) func(a, b int32) int {
	return func(a, b int32) int {
		switch {
		case row[a] > row[b]:
			return -1
		case row[a] < row[b]:
			return 1
		}
		return int(a - b)
	}
}

// candidates returns the ids of the unmasked entries of row (neither −Inf
// nor NaN), sorted best first (ties: lower id), cut to the k best (k > 0);
// with k well below the row's length only those are sorted (kept in a
// heap first).
func (s *sampler) candidates(row []float32, k int) []int32 {
	better := byLogit(row)
	idx := s.idx[:0]
	ninf := float32(math.Inf(-1))
	if k <= 0 || k >= len(row)/4 {
		for i, v := range row {
			if v > ninf {
				idx = append(idx, int32(i))
			}
		}
		slices.SortFunc(idx, better)
		if k > 0 && k < len(idx) {
			idx = idx[:k]
		}
		return idx
	}
	// Keep the k best in a heap with the worst on top, then sort them. One
	// float comparison turns away almost every entry: ids rise as the scan
	// goes, so an entry equal to the worst kept one ranks below it.
	i := 0
	for ; i < len(row) && len(idx) < k; i++ {
		if row[i] > ninf {
			idx = append(idx, int32(i))
		}
	}
	if len(idx) == k {
		heapify(idx, better)
		worst := row[idx[0]]
		for ; i < len(row); i++ {
			if !(row[i] > worst) { // NaN too
				continue
			}
			idx[0] = int32(i)
			siftDown(idx, 0, better)
			worst = row[idx[0]]
		}
	}
	slices.SortFunc(idx, better)
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

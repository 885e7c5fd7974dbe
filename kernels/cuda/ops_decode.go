package cuda

import "fmt"

// The batched decode (attention_decode.cu): every sequence's new keys and
// values appended to its own cache, then its new queries attending to it,
// in two launches for all the sequences of a step.

// decode's geometry: attention_decode.cu's DEC_ROWS (query, head) rows and
// DEC_THREADS threads a block, DEC_APPEND values an append block, and the
// table's ints per sequence.
const (
	decRows     = 8
	decThreads  = 256
	decAppend   = 256
	decTabInts  = 8
	decMaxGridY = 65535 // the grid's y and z limit: sequences (and KV heads) at most
)

// decodeTable is the kernels' table (attention_decode.cu) for the
// sequences of seqOff with cache rows tk and cache offsets kOff, vOff (in
// floats, from the key and value bases).
func decodeTable(seqOff []int32, tk []int, kOff, vOff []int64) []int32 {
	S := len(seqOff) - 1
	t := make([]int32, decTabInts*S)
	for s := range S {
		r := t[decTabInts*s:]
		r[0], r[1], r[2] = seqOff[s], seqOff[s+1]-seqOff[s], int32(tk[s])
		r[4], r[5] = int32(uint32(kOff[s])), int32(kOff[s]>>32)
		r[6], r[7] = int32(uint32(vOff[s])), int32(vOff[s]>>32)
	}
	return t
}

// planAttentionDecodeBatch: attention_decode_append, a block per 256
// values of a sequence's new rows, then attention_decode_batch, a block
// per 8 (query, head) rows of a KV head of a sequence. maxTq is the most
// new tokens of a sequence (0: nothing to launch). kbase, vbase are the
// bases of the table tab's cache offsets.
func planAttentionDecodeBatch(out, q, k, v, kbase, vbase, tab any, S, maxTq, H, KVH, D, W int, scale float32) []step {
	if S == 0 || maxTq == 0 || D == 0 {
		return nil
	}
	kvd := KVH * D
	return []step{
		{Kernel: "attention_decode_append", Grid: Dim3{(maxTq*kvd + decAppend - 1) / decAppend, S, 1}, Block: Dim3{decAppend, 1, 1},
			Args: []any{kbase, vbase, k, v, tab, kvd}},
		{Kernel: "attention_decode_batch", Grid: Dim3{(maxTq*(H/KVH) + decRows - 1) / decRows, KVH, S}, Block: Dim3{decThreads, 1, 1},
			Args: []any{out, q, kbase, vbase, tab, H, KVH, D, W, scale}},
	}
}

// AttentionDecodeBatch is kernels.Backend.AttentionDecodeBatch on device
// buffers: the new tokens of the S sequences of seqOff (host offsets from 0
// to N) are rows of q, out [N,H,D] and k, v [N,KVH,D]; sequence s's caches
// kCache[s], vCache[s] hold Tk_s = Len/(KVH·D) rows, the new ones last,
// which it writes before the attention reads them; W = 0: no window. A
// cache of no rows may be nil. tab is scratch of at least 8·S int32
// elements for the kernels' table of the caches' offsets, which is
// uploaded into it (one cuMemcpyHtoD). 1 ≤ D ≤ 256; S and KVH ≤ 65535.
func (o *Ops) AttentionDecodeBatch(out, q, k, v *Buffer, kCache, vCache []*Buffer, seqOff []int32, tab *Buffer, H, KVH, D, W int, scale float32) error {
	c := check{op: "AttentionDecodeBatch"}
	S := len(seqOff) - 1
	N := 0
	if S >= 0 {
		N = int(seqOff[S])
	}
	c.sizes("N, H, D", N, H, D)
	c.sizes("N, KVH, D", N, KVH, D)
	c.attnHeads(H, KVH, D)
	switch {
	case S < 0 || seqOff[0] != 0:
		c.fail("seqOff %v: want offsets from 0", seqOff)
	case S > decMaxGridY:
		c.fail("%d sequences: more than a grid's %d in z", S, decMaxGridY)
	case len(kCache) != S || len(vCache) != S:
		c.fail("%d key and %d value caches for %d sequences", len(kCache), len(vCache), S)
	case W < 0:
		c.fail("window W = %d: want 0 (none) or at least 1", W)
	}
	if c.err != nil || N == 0 {
		return c.err
	}
	c.buf(o.d, "out", out, N*H*D)
	c.buf(o.d, "q", q, N*H*D)
	c.buf(o.d, "k", k, N*KVH*D)
	c.buf(o.d, "v", v, N*KVH*D)
	c.buf(o.d, "tab", tab, decTabInts*S)
	kvd := KVH * D
	tk := make([]int, S)
	kOff, vOff := make([]int64, S), make([]int64, S)
	var kbase, vbase *Buffer
	maxTq := 0
	for s := range S {
		tq := int(seqOff[s+1] - seqOff[s])
		if tq < 0 {
			c.fail("seqOff decreases at %d: %v", s+1, seqOff)
			break
		}
		maxTq = max(maxTq, tq)
		kc, vc := kCache[s], vCache[s]
		if kc == nil || vc == nil {
			if kc != vc || tq > 0 {
				c.fail("sequence %d: a nil cache for %d new tokens", s, tq)
			}
			continue
		}
		switch {
		case kc.d != o.d || vc.d != o.d:
			c.fail("sequence %d: a cache of another device", s)
		case kc.n != vc.n:
			c.fail("sequence %d: key cache of %d elements, value cache of %d", s, kc.n, vc.n)
		case kc.n%kvd != 0:
			c.fail("sequence %d: cache of %d elements is not whole rows of KVH·D = %d", s, kc.n, kvd)
		case kc.n/kvd < tq:
			c.fail("sequence %d: %d new tokens over a cache of %d rows", s, tq, kc.n/kvd)
		}
		if kbase == nil {
			kbase, vbase = kc, vc
		}
		tk[s] = kc.n / kvd
		kOff[s] = (int64(kc.ptr) - int64(kbase.ptr)) / 4
		vOff[s] = (int64(vc.ptr) - int64(vbase.ptr)) / 4
	}
	if c.err != nil {
		return c.err
	}
	if err := tab.view(0, decTabInts*S).UploadInt32(decodeTable(seqOff, tk, kOff, vOff)); err != nil {
		return fmt.Errorf("CUDA %s: the cache table: %w", c.op, err)
	}
	return o.run(c.op, planAttentionDecodeBatch(out, q, k, v, kbase, vbase, tab, S, maxTq, H, KVH, D, W, scale))
}

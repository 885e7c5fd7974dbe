package kerneltest

import (
	"fmt"
	"sort"
	"sync"
	"unsafe"

	"github.com/hone-rl/hone/kernels"
)

// ResidentBackend is a checking backend for the device seam: it wraps a
// backend, implements kernels.Allocator (Go memory, each allocation
// recorded) and makes every op panic, naming the op and the argument, when
// a float32 or bfloat16 buffer it is given (non-nil, non-empty) does not
// lie inside one of its live allocations. A device backend (kernels/cuda)
// can only reach the memory it allocated; code that runs through
// ResidentBackend without a panic allocates every buffer an op sees through
// kernels.AllocF32/AllocBF16, as that backend needs. Token ids, positions,
// offsets and targets ([]int32) are host edges and are not checked, nor
// are RowMax and ExpShift, the host's row ops (see kernels.Backend).
//
// Freeing checks too: FreeF32 and FreeBF16 panic on a slice that is not a
// whole live allocation (a view, memory from elsewhere, a double free),
// and Live counts what is still allocated, for leak checks.
type ResidentBackend struct {
	b kernels.Backend

	mu    sync.Mutex
	spans []span // live allocations, sorted by address
}

type span struct {
	lo, hi uintptr
	// keep holds the allocation, so that its address is not reused while
	// the span is live.
	keep any
}

// Resident wraps b (ops are computed by b).
func Resident(b kernels.Backend) *ResidentBackend { return &ResidentBackend{b: b} }

var _ kernels.Backend = (*ResidentBackend)(nil)
var _ kernels.Allocator = (*ResidentBackend)(nil)

// Name is the wrapped backend's name, marked.
func (r *ResidentBackend) Name() string { return "resident(" + r.b.Name() + ")" }

// Close closes the wrapped backend.
func (r *ResidentBackend) Close() error { return r.b.Close() }

// Precision is the wrapped backend's (kernels.PrecisionOf).
func (r *ResidentBackend) Precision() kernels.Precision { return kernels.PrecisionOf(r.b) }

// Live returns the number of allocations not yet freed.
func (r *ResidentBackend) Live() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.spans)
}

// LiveBytes returns the bytes of the allocations not yet freed.
func (r *ResidentBackend) LiveBytes() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for _, s := range r.spans {
		n += int64(s.hi - s.lo)
	}
	return n
}

// AllocF32 implements kernels.Allocator.
func (r *ResidentBackend) AllocF32(n int) ([]float32, error) {
	if n < 0 {
		return nil, fmt.Errorf("kerneltest.Resident: AllocF32(%d)", n)
	}
	s := make([]float32, n)
	if n > 0 {
		r.add(uintptr(unsafe.Pointer(&s[0])), uintptr(n)*4, s)
	}
	return s, nil
}

// AllocBF16 implements kernels.Allocator.
func (r *ResidentBackend) AllocBF16(n int) ([]uint16, error) {
	if n < 0 {
		return nil, fmt.Errorf("kerneltest.Resident: AllocBF16(%d)", n)
	}
	s := make([]uint16, n)
	if n > 0 {
		r.add(uintptr(unsafe.Pointer(&s[0])), uintptr(n)*2, s)
	}
	return s, nil
}

// FreeF32 implements kernels.Allocator.
func (r *ResidentBackend) FreeF32(s []float32) {
	if len(s) > 0 {
		r.free("FreeF32", uintptr(unsafe.Pointer(&s[0])), uintptr(len(s))*4)
	}
}

// FreeBF16 implements kernels.Allocator.
func (r *ResidentBackend) FreeBF16(s []uint16) {
	if len(s) > 0 {
		r.free("FreeBF16", uintptr(unsafe.Pointer(&s[0])), uintptr(len(s))*2)
	}
}

func (r *ResidentBackend) add(lo, size uintptr, keep any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := sort.Search(len(r.spans), func(i int) bool { return r.spans[i].lo > lo })
	r.spans = append(r.spans, span{})
	copy(r.spans[i+1:], r.spans[i:])
	r.spans[i] = span{lo: lo, hi: lo + size, keep: keep}
}

func (r *ResidentBackend) free(op string, lo, size uintptr) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := sort.Search(len(r.spans), func(i int) bool { return r.spans[i].lo >= lo })
	if i == len(r.spans) || r.spans[i].lo != lo || r.spans[i].hi != lo+size {
		panic(fmt.Sprintf("kerneltest.Resident: %s of %d bytes at %#x: not a whole live allocation (a view, Go memory, or freed twice)", op, size, lo))
	}
	r.spans = append(r.spans[:i], r.spans[i+1:]...)
}

// check panics unless [lo, lo+size) lies inside one live allocation.
func (r *ResidentBackend) check(op, arg string, lo, size uintptr, n int) {
	r.mu.Lock()
	i := sort.Search(len(r.spans), func(i int) bool { return r.spans[i].lo > lo }) - 1
	ok := i >= 0 && lo+size <= r.spans[i].hi
	r.mu.Unlock()
	if !ok {
		panic(fmt.Sprintf("kerneltest.Resident: %s: argument %s (%d values at %#x) is not inside memory the backend allocated", op, arg, n, lo))
	}
}

func (r *ResidentBackend) f32(op, arg string, s []float32) {
	if len(s) > 0 {
		r.check(op, arg, uintptr(unsafe.Pointer(&s[0])), uintptr(len(s))*4, len(s))
	}
}

func (r *ResidentBackend) bf16(op, arg string, s []uint16) {
	if len(s) > 0 {
		r.check(op, arg, uintptr(unsafe.Pointer(&s[0])), uintptr(len(s))*2, len(s))
	}
}

// RowMax is the host's row op: not checked (see kernels.Backend).
func (r *ResidentBackend) RowMax(x []float32) float32 { return r.b.RowMax(x) }

// ExpShift is the host's row op: not checked (see kernels.Backend).
func (r *ResidentBackend) ExpShift(dst, x []float32, mu, scale float32) float64 {
	return r.b.ExpShift(dst, x, mu, scale)
}

// Matmul checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) Matmul(c, a, b []float32, M, N, K int, transA, transB bool, beta float32) {
	r.f32("Matmul", "c", c)
	r.f32("Matmul", "a", a)
	r.f32("Matmul", "b", b)
	r.b.Matmul(c, a, b, M, N, K, transA, transB, beta)
}

// MatmulBatched checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) MatmulBatched(c, a, b []float32, batch, M, N, K int, transA, transB bool, beta float32) {
	r.f32("MatmulBatched", "c", c)
	r.f32("MatmulBatched", "a", a)
	r.f32("MatmulBatched", "b", b)
	r.b.MatmulBatched(c, a, b, batch, M, N, K, transA, transB, beta)
}

// LinearForward checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) LinearForward(out, inp, weight, bias []float32, N, C, OC int) {
	r.f32("LinearForward", "out", out)
	r.f32("LinearForward", "inp", inp)
	r.f32("LinearForward", "weight", weight)
	r.f32("LinearForward", "bias", bias)
	r.b.LinearForward(out, inp, weight, bias, N, C, OC)
}

// LinearForwardBF16 checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) LinearForwardBF16(out, inp []float32, weight []uint16, bias []float32, N, C, OC int) {
	r.f32("LinearForwardBF16", "out", out)
	r.f32("LinearForwardBF16", "inp", inp)
	r.bf16("LinearForwardBF16", "weight", weight)
	r.f32("LinearForwardBF16", "bias", bias)
	r.b.LinearForwardBF16(out, inp, weight, bias, N, C, OC)
}

// LinearBackward checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) LinearBackward(dinp, dweight, dbias, dout, inp, weight []float32, N, C, OC int) {
	r.f32("LinearBackward", "dinp", dinp)
	r.f32("LinearBackward", "dweight", dweight)
	r.f32("LinearBackward", "dbias", dbias)
	r.f32("LinearBackward", "dout", dout)
	r.f32("LinearBackward", "inp", inp)
	r.f32("LinearBackward", "weight", weight)
	r.b.LinearBackward(dinp, dweight, dbias, dout, inp, weight, N, C, OC)
}

// LinearBackwardBF16 checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) LinearBackwardBF16(dinp, dout []float32, weight []uint16, N, C, OC int) {
	r.f32("LinearBackwardBF16", "dinp", dinp)
	r.f32("LinearBackwardBF16", "dout", dout)
	r.bf16("LinearBackwardBF16", "weight", weight)
	r.b.LinearBackwardBF16(dinp, dout, weight, N, C, OC)
}

// RMSNormForward checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) RMSNormForward(out, rstd, inp, weight []float32, N, C int, eps float32) {
	r.f32("RMSNormForward", "out", out)
	r.f32("RMSNormForward", "rstd", rstd)
	r.f32("RMSNormForward", "inp", inp)
	r.f32("RMSNormForward", "weight", weight)
	r.b.RMSNormForward(out, rstd, inp, weight, N, C, eps)
}

// RMSNormBackward checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) RMSNormBackward(dinp, dweight, dout, rstd, inp, weight []float32, N, C int) {
	r.f32("RMSNormBackward", "dinp", dinp)
	r.f32("RMSNormBackward", "dweight", dweight)
	r.f32("RMSNormBackward", "dout", dout)
	r.f32("RMSNormBackward", "rstd", rstd)
	r.f32("RMSNormBackward", "inp", inp)
	r.f32("RMSNormBackward", "weight", weight)
	r.b.RMSNormBackward(dinp, dweight, dout, rstd, inp, weight, N, C)
}

// RoPEForward checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) RoPEForward(out, inp []float32, pos []int32, invFreq []float32, N, H, D int) {
	r.f32("RoPEForward", "out", out)
	r.f32("RoPEForward", "inp", inp)
	r.f32("RoPEForward", "invFreq", invFreq)
	r.b.RoPEForward(out, inp, pos, invFreq, N, H, D)
}

// RoPEBackward checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) RoPEBackward(dinp, dout []float32, pos []int32, invFreq []float32, N, H, D int) {
	r.f32("RoPEBackward", "dinp", dinp)
	r.f32("RoPEBackward", "dout", dout)
	r.f32("RoPEBackward", "invFreq", invFreq)
	r.b.RoPEBackward(dinp, dout, pos, invFreq, N, H, D)
}

// SwiGLUForward checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) SwiGLUForward(out, gate, up []float32, n int) {
	r.f32("SwiGLUForward", "out", out)
	r.f32("SwiGLUForward", "gate", gate)
	r.f32("SwiGLUForward", "up", up)
	r.b.SwiGLUForward(out, gate, up, n)
}

// SwiGLUBackward checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) SwiGLUBackward(dgate, dup, dout, gate, up []float32, n int) {
	r.f32("SwiGLUBackward", "dgate", dgate)
	r.f32("SwiGLUBackward", "dup", dup)
	r.f32("SwiGLUBackward", "dout", dout)
	r.f32("SwiGLUBackward", "gate", gate)
	r.f32("SwiGLUBackward", "up", up)
	r.b.SwiGLUBackward(dgate, dup, dout, gate, up, n)
}

// GeGLUForward checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) GeGLUForward(out, gate, up []float32, n int) {
	r.f32("GeGLUForward", "out", out)
	r.f32("GeGLUForward", "gate", gate)
	r.f32("GeGLUForward", "up", up)
	r.b.GeGLUForward(out, gate, up, n)
}

// GeGLUBackward checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) GeGLUBackward(dgate, dup, dout, gate, up []float32, n int) {
	r.f32("GeGLUBackward", "dgate", dgate)
	r.f32("GeGLUBackward", "dup", dup)
	r.f32("GeGLUBackward", "dout", dout)
	r.f32("GeGLUBackward", "gate", gate)
	r.f32("GeGLUBackward", "up", up)
	r.b.GeGLUBackward(dgate, dup, dout, gate, up, n)
}

// AttentionForward checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) AttentionForward(out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D int, scale float32) {
	r.f32("AttentionForward", "out", out)
	r.f32("AttentionForward", "lse", lse)
	r.f32("AttentionForward", "q", q)
	r.f32("AttentionForward", "k", k)
	r.f32("AttentionForward", "v", v)
	r.b.AttentionForward(out, lse, q, k, v, seqOff, N, H, KVH, D, scale)
}

// AttentionBackward checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D int, scale float32) {
	r.f32("AttentionBackward", "dq", dq)
	r.f32("AttentionBackward", "dk", dk)
	r.f32("AttentionBackward", "dv", dv)
	r.f32("AttentionBackward", "dout", dout)
	r.f32("AttentionBackward", "out", out)
	r.f32("AttentionBackward", "lse", lse)
	r.f32("AttentionBackward", "q", q)
	r.f32("AttentionBackward", "k", k)
	r.f32("AttentionBackward", "v", v)
	r.b.AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D, scale)
}

// AttentionWindowForward checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) AttentionWindowForward(out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D, W int, scale float32) {
	r.f32("AttentionWindowForward", "out", out)
	r.f32("AttentionWindowForward", "lse", lse)
	r.f32("AttentionWindowForward", "q", q)
	r.f32("AttentionWindowForward", "k", k)
	r.f32("AttentionWindowForward", "v", v)
	r.b.AttentionWindowForward(out, lse, q, k, v, seqOff, N, H, KVH, D, W, scale)
}

// AttentionWindowBackward checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) AttentionWindowBackward(dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D, W int, scale float32) {
	r.f32("AttentionWindowBackward", "dq", dq)
	r.f32("AttentionWindowBackward", "dk", dk)
	r.f32("AttentionWindowBackward", "dv", dv)
	r.f32("AttentionWindowBackward", "dout", dout)
	r.f32("AttentionWindowBackward", "out", out)
	r.f32("AttentionWindowBackward", "lse", lse)
	r.f32("AttentionWindowBackward", "q", q)
	r.f32("AttentionWindowBackward", "k", k)
	r.f32("AttentionWindowBackward", "v", v)
	r.b.AttentionWindowBackward(dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D, W, scale)
}

// AttentionDecode checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) AttentionDecode(out, q, kCache, vCache []float32, Tq, Tk, H, KVH, D int, scale float32) {
	r.f32("AttentionDecode", "out", out)
	r.f32("AttentionDecode", "q", q)
	r.f32("AttentionDecode", "kCache", kCache)
	r.f32("AttentionDecode", "vCache", vCache)
	r.b.AttentionDecode(out, q, kCache, vCache, Tq, Tk, H, KVH, D, scale)
}

// AttentionDecodeBatch checks its buffers, every sequence's caches among
// them, then calls the wrapped backend.
func (r *ResidentBackend) AttentionDecodeBatch(out, q, k, v []float32, kCache, vCache [][]float32, seqOff []int32, N, H, KVH, D, W int, scale float32) {
	const op = "AttentionDecodeBatch"
	r.f32(op, "out", out)
	r.f32(op, "q", q)
	r.f32(op, "k", k)
	r.f32(op, "v", v)
	for s := range kCache {
		r.f32(op, fmt.Sprintf("kCache[%d]", s), kCache[s])
	}
	for s := range vCache {
		r.f32(op, fmt.Sprintf("vCache[%d]", s), vCache[s])
	}
	r.b.AttentionDecodeBatch(out, q, k, v, kCache, vCache, seqOff, N, H, KVH, D, W, scale)
}

// EmbeddingForward checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) EmbeddingForward(out []float32, ids []int32, table []float32, N, C, V int) {
	r.f32("EmbeddingForward", "out", out)
	r.f32("EmbeddingForward", "table", table)
	r.b.EmbeddingForward(out, ids, table, N, C, V)
}

// EmbeddingForwardBF16 checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) EmbeddingForwardBF16(out []float32, ids []int32, table []uint16, N, C, V int) {
	r.f32("EmbeddingForwardBF16", "out", out)
	r.bf16("EmbeddingForwardBF16", "table", table)
	r.b.EmbeddingForwardBF16(out, ids, table, N, C, V)
}

// EmbeddingBackward checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) EmbeddingBackward(dtable, dout []float32, ids []int32, N, C, V int) {
	r.f32("EmbeddingBackward", "dtable", dtable)
	r.f32("EmbeddingBackward", "dout", dout)
	r.b.EmbeddingBackward(dtable, dout, ids, N, C, V)
}

// LogSoftmaxForward checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) LogSoftmaxForward(out, inp []float32, N, V int) {
	r.f32("LogSoftmaxForward", "out", out)
	r.f32("LogSoftmaxForward", "inp", inp)
	r.b.LogSoftmaxForward(out, inp, N, V)
}

// LogSoftmaxBackward checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) LogSoftmaxBackward(dinp, dout, out []float32, N, V int) {
	r.f32("LogSoftmaxBackward", "dinp", dinp)
	r.f32("LogSoftmaxBackward", "dout", dout)
	r.f32("LogSoftmaxBackward", "out", out)
	r.b.LogSoftmaxBackward(dinp, dout, out, N, V)
}

// EntropyForward checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) EntropyForward(ent, inp []float32, N, V int) {
	r.f32("EntropyForward", "ent", ent)
	r.f32("EntropyForward", "inp", inp)
	r.b.EntropyForward(ent, inp, N, V)
}

// EntropyBackward checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) EntropyBackward(dinp, dent, inp []float32, N, V int) {
	r.f32("EntropyBackward", "dinp", dinp)
	r.f32("EntropyBackward", "dent", dent)
	r.f32("EntropyBackward", "inp", inp)
	r.b.EntropyBackward(dinp, dent, inp, N, V)
}

// LogprobForward checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) LogprobForward(logprob, entropy, lse, expect, hidden, weight []float32, targets []int32, N, C, V, chunk int) {
	r.f32("LogprobForward", "logprob", logprob)
	r.f32("LogprobForward", "entropy", entropy)
	r.f32("LogprobForward", "lse", lse)
	r.f32("LogprobForward", "expect", expect)
	r.f32("LogprobForward", "hidden", hidden)
	r.f32("LogprobForward", "weight", weight)
	r.b.LogprobForward(logprob, entropy, lse, expect, hidden, weight, targets, N, C, V, chunk)
}

// LogprobForwardBF16 checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) LogprobForwardBF16(logprob, entropy, lse, expect, hidden []float32, weight []uint16, targets []int32, N, C, V, chunk int) {
	r.f32("LogprobForwardBF16", "logprob", logprob)
	r.f32("LogprobForwardBF16", "entropy", entropy)
	r.f32("LogprobForwardBF16", "lse", lse)
	r.f32("LogprobForwardBF16", "expect", expect)
	r.f32("LogprobForwardBF16", "hidden", hidden)
	r.bf16("LogprobForwardBF16", "weight", weight)
	r.b.LogprobForwardBF16(logprob, entropy, lse, expect, hidden, weight, targets, N, C, V, chunk)
}

// LogprobBackward checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) LogprobBackward(dhidden, dweight, dlogprob, dentropy, lse, entropy, hidden, weight []float32, targets []int32, N, C, V, chunk int) {
	r.f32("LogprobBackward", "dhidden", dhidden)
	r.f32("LogprobBackward", "dweight", dweight)
	r.f32("LogprobBackward", "dlogprob", dlogprob)
	r.f32("LogprobBackward", "dentropy", dentropy)
	r.f32("LogprobBackward", "lse", lse)
	r.f32("LogprobBackward", "entropy", entropy)
	r.f32("LogprobBackward", "hidden", hidden)
	r.f32("LogprobBackward", "weight", weight)
	r.b.LogprobBackward(dhidden, dweight, dlogprob, dentropy, lse, entropy, hidden, weight, targets, N, C, V, chunk)
}

// LogprobBackwardBF16 checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) LogprobBackwardBF16(dhidden, dlogprob, dentropy, lse, entropy, hidden []float32, weight []uint16, targets []int32, N, C, V, chunk int) {
	r.f32("LogprobBackwardBF16", "dhidden", dhidden)
	r.f32("LogprobBackwardBF16", "dlogprob", dlogprob)
	r.f32("LogprobBackwardBF16", "dentropy", dentropy)
	r.f32("LogprobBackwardBF16", "lse", lse)
	r.f32("LogprobBackwardBF16", "entropy", entropy)
	r.f32("LogprobBackwardBF16", "hidden", hidden)
	r.bf16("LogprobBackwardBF16", "weight", weight)
	r.b.LogprobBackwardBF16(dhidden, dlogprob, dentropy, lse, entropy, hidden, weight, targets, N, C, V, chunk)
}

// LogprobBackwardExpect checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) LogprobBackwardExpect(dhidden, dlogprob, expect, weight []float32, targets []int32, N, C, V int) {
	r.f32("LogprobBackwardExpect", "dhidden", dhidden)
	r.f32("LogprobBackwardExpect", "dlogprob", dlogprob)
	r.f32("LogprobBackwardExpect", "expect", expect)
	r.f32("LogprobBackwardExpect", "weight", weight)
	r.b.LogprobBackwardExpect(dhidden, dlogprob, expect, weight, targets, N, C, V)
}

// LogprobBackwardExpectBF16 checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) LogprobBackwardExpectBF16(dhidden, dlogprob, expect []float32, weight []uint16, targets []int32, N, C, V int) {
	r.f32("LogprobBackwardExpectBF16", "dhidden", dhidden)
	r.f32("LogprobBackwardExpectBF16", "dlogprob", dlogprob)
	r.f32("LogprobBackwardExpectBF16", "expect", expect)
	r.bf16("LogprobBackwardExpectBF16", "weight", weight)
	r.b.LogprobBackwardExpectBF16(dhidden, dlogprob, expect, weight, targets, N, C, V)
}

// AdamW checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) AdamW(param, grad, m, v []float32, n, step int, h kernels.AdamWParams) {
	r.f32("AdamW", "param", param)
	r.f32("AdamW", "grad", grad)
	r.f32("AdamW", "m", m)
	r.f32("AdamW", "v", v)
	r.b.AdamW(param, grad, m, v, n, step, h)
}

// Add checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) Add(out, a, b []float32, n int) {
	r.f32("Add", "out", out)
	r.f32("Add", "a", a)
	r.f32("Add", "b", b)
	r.b.Add(out, a, b, n)
}

// Scale checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) Scale(out, a []float32, s float32, n int) {
	r.f32("Scale", "out", out)
	r.f32("Scale", "a", a)
	r.b.Scale(out, a, s, n)
}

// AXPY checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) AXPY(out, a []float32, s float32, n int) {
	r.f32("AXPY", "out", out)
	r.f32("AXPY", "a", a)
	r.b.AXPY(out, a, s, n)
}

// AddScalar checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) AddScalar(out, a []float32, s float32, n int) {
	r.f32("AddScalar", "out", out)
	r.f32("AddScalar", "a", a)
	r.b.AddScalar(out, a, s, n)
}

// SumSquares checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) SumSquares(x []float32, n int) float64 {
	r.f32("SumSquares", "x", x)
	return r.b.SumSquares(x, n)
}

// Copy checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) Copy(dst, src []float32, n int) {
	r.f32("Copy", "dst", dst)
	r.f32("Copy", "src", src)
	r.b.Copy(dst, src, n)
}

// Zero checks its buffers, then calls the wrapped backend.
func (r *ResidentBackend) Zero(x []float32, n int) {
	r.f32("Zero", "x", x)
	r.b.Zero(x, n)
}

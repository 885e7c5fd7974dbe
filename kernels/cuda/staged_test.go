package cuda_test

import (
	"fmt"
	"sort"
	"unsafe"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
)

// staged runs kerneltest's cases, whose buffers come from make, on a
// cuda.Backend, which takes only its own memory: each op copies its
// float32 and bfloat16 arguments into the backend's memory (AllocBF16),
// calls the backend, and copies them back. Arguments that overlap (an op
// in place, views of one buffer) are staged as one allocation, so aliasing
// is kept. The int32 edges pass as they are: the backend copies them
// itself.
type staged struct{ b *cuda.Backend }

// span is one argument being staged: n bytes at p.
type span struct {
	arg any // *[]float32 or *[]uint16
	p   unsafe.Pointer
	n   int
}

// group is overlapping arguments' bytes, staged as one allocation.
type group struct {
	p   unsafe.Pointer
	n   int
	mem []uint16
}

func (g *group) end() uintptr { return uintptr(g.p) + uintptr(g.n) }

// stage replaces the slices args point at (*[]float32, *[]uint16; empty
// ones are left alone) by views of backend memory, and returns the function
// that copies them back, frees that memory and puts the slices back.
func (s staged) stage(args ...any) func() {
	var spans []span
	for _, a := range args {
		switch v := a.(type) {
		case *[]float32:
			if len(*v) > 0 {
				spans = append(spans, span{a, unsafe.Pointer(&(*v)[0]), 4 * len(*v)})
			}
		case *[]uint16:
			if len(*v) > 0 {
				spans = append(spans, span{a, unsafe.Pointer(&(*v)[0]), 2 * len(*v)})
			}
		default:
			panic(fmt.Sprintf("staged: a %T", a))
		}
	}
	sort.Slice(spans, func(i, j int) bool { return uintptr(spans[i].p) < uintptr(spans[j].p) })
	var groups []*group
	for _, sp := range spans {
		if len(groups) == 0 || uintptr(sp.p) >= groups[len(groups)-1].end() {
			groups = append(groups, &group{p: sp.p, n: sp.n})
		}
		g := groups[len(groups)-1]
		g.n = int(max(g.end(), uintptr(sp.p)+uintptr(sp.n)) - uintptr(g.p))
	}
	for _, g := range groups {
		mem, err := s.b.AllocBF16((g.n + 1) / 2)
		if err != nil {
			panic(err)
		}
		g.mem = mem
		copy(bytesOf(unsafe.Pointer(&mem[0]), g.n), bytesOf(g.p, g.n))
	}
	var undo []func()
	for _, sp := range spans {
		g := groups[sort.Search(len(groups), func(i int) bool { return groups[i].end() > uintptr(sp.p) })]
		at := unsafe.Add(unsafe.Pointer(&g.mem[0]), uintptr(sp.p)-uintptr(g.p))
		switch v := sp.arg.(type) {
		case *[]float32:
			orig := *v
			*v = unsafe.Slice((*float32)(at), len(orig))
			undo = append(undo, func() { *v = orig })
		case *[]uint16:
			orig := *v
			*v = unsafe.Slice((*uint16)(at), len(orig))
			undo = append(undo, func() { *v = orig })
		}
	}
	return func() {
		for _, g := range groups {
			copy(bytesOf(g.p, g.n), bytesOf(unsafe.Pointer(&g.mem[0]), g.n))
			s.b.FreeBF16(g.mem)
		}
		for _, u := range undo {
			u()
		}
	}
}

func bytesOf(p unsafe.Pointer, n int) []byte { return unsafe.Slice((*byte)(p), n) }

func (s staged) Name() string                 { return "staged " + s.b.Name() }
func (s staged) Close() error                 { return nil }
func (s staged) Precision() kernels.Precision { return s.b.Precision() }
func (s staged) RowMax(x []float32) float32   { return s.b.RowMax(x) }
func (s staged) ExpShift(dst, x []float32, mu, scale float32) float64 {
	return s.b.ExpShift(dst, x, mu, scale)
}

func (s staged) Matmul(c, a, b []float32, M, N, K int, tA, tB bool, beta float32) {
	defer s.stage(&c, &a, &b)()
	s.b.Matmul(c, a, b, M, N, K, tA, tB, beta)
}

func (s staged) MatmulBatched(c, a, b []float32, batch, M, N, K int, tA, tB bool, beta float32) {
	defer s.stage(&c, &a, &b)()
	s.b.MatmulBatched(c, a, b, batch, M, N, K, tA, tB, beta)
}

func (s staged) LinearForward(out, inp, weight, bias []float32, N, C, OC int) {
	defer s.stage(&out, &inp, &weight, &bias)()
	s.b.LinearForward(out, inp, weight, bias, N, C, OC)
}

func (s staged) LinearForwardBF16(out, inp []float32, weight []uint16, bias []float32, N, C, OC int) {
	defer s.stage(&out, &inp, &weight, &bias)()
	s.b.LinearForwardBF16(out, inp, weight, bias, N, C, OC)
}

func (s staged) LinearBackward(dinp, dweight, dbias, dout, inp, weight []float32, N, C, OC int) {
	defer s.stage(&dinp, &dweight, &dbias, &dout, &inp, &weight)()
	s.b.LinearBackward(dinp, dweight, dbias, dout, inp, weight, N, C, OC)
}

func (s staged) LinearBackwardBF16(dinp, dout []float32, weight []uint16, N, C, OC int) {
	defer s.stage(&dinp, &dout, &weight)()
	s.b.LinearBackwardBF16(dinp, dout, weight, N, C, OC)
}

func (s staged) RMSNormForward(out, rstd, inp, weight []float32, N, C int, eps float32) {
	defer s.stage(&out, &rstd, &inp, &weight)()
	s.b.RMSNormForward(out, rstd, inp, weight, N, C, eps)
}

func (s staged) RMSNormBackward(dinp, dweight, dout, rstd, inp, weight []float32, N, C int) {
	defer s.stage(&dinp, &dweight, &dout, &rstd, &inp, &weight)()
	s.b.RMSNormBackward(dinp, dweight, dout, rstd, inp, weight, N, C)
}

func (s staged) RoPEForward(out, inp []float32, pos []int32, invFreq []float32, N, H, D int) {
	defer s.stage(&out, &inp, &invFreq)()
	s.b.RoPEForward(out, inp, pos, invFreq, N, H, D)
}

func (s staged) RoPEBackward(dinp, dout []float32, pos []int32, invFreq []float32, N, H, D int) {
	defer s.stage(&dinp, &dout, &invFreq)()
	s.b.RoPEBackward(dinp, dout, pos, invFreq, N, H, D)
}

func (s staged) SwiGLUForward(out, gate, up []float32, n int) {
	defer s.stage(&out, &gate, &up)()
	s.b.SwiGLUForward(out, gate, up, n)
}

func (s staged) SwiGLUBackward(dgate, dup, dout, gate, up []float32, n int) {
	defer s.stage(&dgate, &dup, &dout, &gate, &up)()
	s.b.SwiGLUBackward(dgate, dup, dout, gate, up, n)
}

func (s staged) GeGLUForward(out, gate, up []float32, n int) {
	defer s.stage(&out, &gate, &up)()
	s.b.GeGLUForward(out, gate, up, n)
}

func (s staged) GeGLUBackward(dgate, dup, dout, gate, up []float32, n int) {
	defer s.stage(&dgate, &dup, &dout, &gate, &up)()
	s.b.GeGLUBackward(dgate, dup, dout, gate, up, n)
}

func (s staged) AttentionForward(out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D int, scale float32) {
	defer s.stage(&out, &lse, &q, &k, &v)()
	s.b.AttentionForward(out, lse, q, k, v, seqOff, N, H, KVH, D, scale)
}

func (s staged) AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D int, scale float32) {
	defer s.stage(&dq, &dk, &dv, &dout, &out, &lse, &q, &k, &v)()
	s.b.AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D, scale)
}

func (s staged) AttentionWindowForward(out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D, W int, scale float32) {
	defer s.stage(&out, &lse, &q, &k, &v)()
	s.b.AttentionWindowForward(out, lse, q, k, v, seqOff, N, H, KVH, D, W, scale)
}

func (s staged) AttentionWindowBackward(dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D, W int, scale float32) {
	defer s.stage(&dq, &dk, &dv, &dout, &out, &lse, &q, &k, &v)()
	s.b.AttentionWindowBackward(dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D, W, scale)
}

func (s staged) AttentionDecode(out, q, kCache, vCache []float32, Tq, Tk, H, KVH, D int, scale float32) {
	defer s.stage(&out, &q, &kCache, &vCache)()
	s.b.AttentionDecode(out, q, kCache, vCache, Tq, Tk, H, KVH, D, scale)
}

func (s staged) EmbeddingForward(out []float32, ids []int32, table []float32, N, C, V int) {
	defer s.stage(&out, &table)()
	s.b.EmbeddingForward(out, ids, table, N, C, V)
}

func (s staged) EmbeddingForwardBF16(out []float32, ids []int32, table []uint16, N, C, V int) {
	defer s.stage(&out, &table)()
	s.b.EmbeddingForwardBF16(out, ids, table, N, C, V)
}

func (s staged) EmbeddingBackward(dtable, dout []float32, ids []int32, N, C, V int) {
	defer s.stage(&dtable, &dout)()
	s.b.EmbeddingBackward(dtable, dout, ids, N, C, V)
}

func (s staged) LogSoftmaxForward(out, inp []float32, N, V int) {
	defer s.stage(&out, &inp)()
	s.b.LogSoftmaxForward(out, inp, N, V)
}

func (s staged) LogSoftmaxBackward(dinp, dout, out []float32, N, V int) {
	defer s.stage(&dinp, &dout, &out)()
	s.b.LogSoftmaxBackward(dinp, dout, out, N, V)
}

func (s staged) EntropyForward(ent, inp []float32, N, V int) {
	defer s.stage(&ent, &inp)()
	s.b.EntropyForward(ent, inp, N, V)
}

func (s staged) EntropyBackward(dinp, dent, inp []float32, N, V int) {
	defer s.stage(&dinp, &dent, &inp)()
	s.b.EntropyBackward(dinp, dent, inp, N, V)
}

func (s staged) LogprobForward(logprob, entropy, lse, expect, hidden, weight []float32, targets []int32, N, C, V, chunk int) {
	defer s.stage(&logprob, &entropy, &lse, &expect, &hidden, &weight)()
	s.b.LogprobForward(logprob, entropy, lse, expect, hidden, weight, targets, N, C, V, chunk)
}

func (s staged) LogprobForwardBF16(logprob, entropy, lse, expect, hidden []float32, weight []uint16, targets []int32, N, C, V, chunk int) {
	defer s.stage(&logprob, &entropy, &lse, &expect, &hidden, &weight)()
	s.b.LogprobForwardBF16(logprob, entropy, lse, expect, hidden, weight, targets, N, C, V, chunk)
}

func (s staged) LogprobBackward(dhidden, dweight, dlogprob, dentropy, lse, entropy, hidden, weight []float32, targets []int32, N, C, V, chunk int) {
	defer s.stage(&dhidden, &dweight, &dlogprob, &dentropy, &lse, &entropy, &hidden, &weight)()
	s.b.LogprobBackward(dhidden, dweight, dlogprob, dentropy, lse, entropy, hidden, weight, targets, N, C, V, chunk)
}

func (s staged) LogprobBackwardBF16(dhidden, dlogprob, dentropy, lse, entropy, hidden []float32, weight []uint16, targets []int32, N, C, V, chunk int) {
	defer s.stage(&dhidden, &dlogprob, &dentropy, &lse, &entropy, &hidden, &weight)()
	s.b.LogprobBackwardBF16(dhidden, dlogprob, dentropy, lse, entropy, hidden, weight, targets, N, C, V, chunk)
}

func (s staged) LogprobBackwardExpect(dhidden, dlogprob, expect, weight []float32, targets []int32, N, C, V int) {
	defer s.stage(&dhidden, &dlogprob, &expect, &weight)()
	s.b.LogprobBackwardExpect(dhidden, dlogprob, expect, weight, targets, N, C, V)
}

func (s staged) LogprobBackwardExpectBF16(dhidden, dlogprob, expect []float32, weight []uint16, targets []int32, N, C, V int) {
	defer s.stage(&dhidden, &dlogprob, &expect, &weight)()
	s.b.LogprobBackwardExpectBF16(dhidden, dlogprob, expect, weight, targets, N, C, V)
}

func (s staged) AdamW(param, grad, m, v []float32, n, step int, h kernels.AdamWParams) {
	defer s.stage(&param, &grad, &m, &v)()
	s.b.AdamW(param, grad, m, v, n, step, h)
}

func (s staged) Add(out, a, b []float32, n int) {
	defer s.stage(&out, &a, &b)()
	s.b.Add(out, a, b, n)
}

func (s staged) Scale(out, a []float32, x float32, n int) {
	defer s.stage(&out, &a)()
	s.b.Scale(out, a, x, n)
}

func (s staged) AXPY(out, a []float32, x float32, n int) {
	defer s.stage(&out, &a)()
	s.b.AXPY(out, a, x, n)
}

func (s staged) AddScalar(out, a []float32, x float32, n int) {
	defer s.stage(&out, &a)()
	s.b.AddScalar(out, a, x, n)
}

func (s staged) Copy(dst, src []float32, n int) {
	defer s.stage(&dst, &src)()
	s.b.Copy(dst, src, n)
}

func (s staged) Zero(x []float32, n int) {
	defer s.stage(&x)()
	s.b.Zero(x, n)
}

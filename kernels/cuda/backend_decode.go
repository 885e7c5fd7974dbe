package cuda

import (
	"fmt"
	"unsafe"

	"github.com/hone-rl/hone/kernels"
)

// AttentionDecodeBatch is kernels.Backend.AttentionDecodeBatch in two
// launches (Ops.AttentionDecodeBatch): every sequence's cache slices are
// checked as memory of this backend's, like any other argument, and their
// offsets go to the device as the op's int32 edge.
func (b *Backend) AttentionDecodeBatch(out, q, k, v []float32, kCache, vCache [][]float32, seqOff []int32, N, H, KVH, D, W int, scale float32) {
	const op = "AttentionDecodeBatch"
	kernels.NeedAttentionDecodeBatch(op, out, q, k, v, kCache, vCache, seqOff, N, H, KVH, D, W)
	if N*D == 0 {
		return
	}
	S := len(seqOff) - 1
	b.onDevice(op, func() error {
		kc, vc := make([]*Buffer, S), make([]*Buffer, S)
		for s := range S {
			kc[s], vc[s] = b.cache(op, "kCache", s, kCache[s]), b.cache(op, "vCache", s, vCache[s])
		}
		return b.ops.AttentionDecodeBatch(b.f32(op, "out", out), b.f32(op, "q", q), b.f32(op, "k", k), b.f32(op, "v", v),
			kc, vc, seqOff[:S+1], b.scratch(op, decTabInts*S), H, KVH, D, W, scale)
	})
}

// cache is f32 for sequence s's cache x, named only when it is not this
// backend's memory; b.mu is held.
func (b *Backend) cache(op, name string, s int, x []float32) *Buffer {
	if len(x) == 0 {
		return nil
	}
	addr := uintptr(unsafe.Pointer(&x[0]))
	a := b.find(addr, 4*len(x))
	if a == nil {
		foreign(op, fmt.Sprintf("%s[%d]", name, s), len(x), addr)
	}
	return &Buffer{d: b.d, ptr: DevPtr(addr), n: len(x), base: a.buf}
}

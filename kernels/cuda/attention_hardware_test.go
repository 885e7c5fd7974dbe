package cuda_test

import (
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/kerneltest"
)

// The attention ops of deviceBackend: Ops on a device, after the host
// checks a backend makes (kernels/check.go); seqOff uploaded as int32.

func (b deviceBackend) AttentionForward(out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D int, scale float32) {
	kernels.NeedAttentionForward("AttentionForward", out, lse, q, k, v, seqOff, N, H, KVH, D)
	b.call("AttentionForward", func(buf func([]float32) *cuda.Buffer, ibuf func([]int32) *cuda.Buffer) error {
		return b.ops.AttentionForward(buf(out), buf(lse), buf(q), buf(k), buf(v), ibuf(seqOff), len(seqOff)-1, N, H, KVH, D, scale)
	})
}

func (b deviceBackend) AttentionWindowForward(out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D, W int, scale float32) {
	kernels.NeedWindow("AttentionWindowForward", W)
	kernels.NeedAttentionForward("AttentionWindowForward", out, lse, q, k, v, seqOff, N, H, KVH, D)
	b.call("AttentionWindowForward", func(buf func([]float32) *cuda.Buffer, ibuf func([]int32) *cuda.Buffer) error {
		return b.ops.AttentionWindowForward(buf(out), buf(lse), buf(q), buf(k), buf(v), ibuf(seqOff), len(seqOff)-1, N, H, KVH, D, W, scale)
	})
}

func (b deviceBackend) AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D int, scale float32) {
	kernels.NeedAttentionBackward("AttentionBackward", dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D)
	b.call("AttentionBackward", func(buf func([]float32) *cuda.Buffer, ibuf func([]int32) *cuda.Buffer) error {
		return b.ops.AttentionBackward(buf(dq), buf(dk), buf(dv), buf(dout), buf(out), buf(lse), buf(q), buf(k), buf(v), ibuf(seqOff), len(seqOff)-1, N, H, KVH, D, scale)
	})
}

func (b deviceBackend) AttentionWindowBackward(dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D, W int, scale float32) {
	kernels.NeedWindow("AttentionWindowBackward", W)
	kernels.NeedAttentionBackward("AttentionWindowBackward", dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D)
	b.call("AttentionWindowBackward", func(buf func([]float32) *cuda.Buffer, ibuf func([]int32) *cuda.Buffer) error {
		return b.ops.AttentionWindowBackward(buf(dq), buf(dk), buf(dv), buf(dout), buf(out), buf(lse), buf(q), buf(k), buf(v), ibuf(seqOff), len(seqOff)-1, N, H, KVH, D, W, scale)
	})
}

func (b deviceBackend) AttentionDecode(out, q, kCache, vCache []float32, Tq, Tk, H, KVH, D int, scale float32) {
	b.call("AttentionDecode", func(buf func([]float32) *cuda.Buffer, _ func([]int32) *cuda.Buffer) error {
		return b.ops.AttentionDecode(buf(out), buf(q), buf(kCache), buf(vCache), Tq, Tk, H, KVH, D, scale)
	})
}

// attentionOnHardware runs kerneltest's attention groups on Ops, the shim
// test's wide-head shapes, and (not under -test.short) packed batches of
// the 7B shape's heads (D = 128) and Gemma 3's (D = 256, a 128-key
// window), each backward twice for the same bits.
func attentionOnHardware(t *testing.T, b deviceBackend) {
	kerneltest.RunOps(t, b, "Attention", "AttentionWindow", "AttentionDecode")
	t.Run("wide heads", func(t *testing.T) { attentionAgainstRef(t, b, attnWideShapes) })
	t.Run("long sequences", func(t *testing.T) {
		if testing.Short() {
			t.Skip("-test.short (run.sh's memcheck step): the small shapes only")
		}
		attentionAgainstRef(t, b, []attnCase{
			{lens: []int{513, 300, 211}, H: 4, KVH: 2, D: 128, bitwiseDet: true},
			{lens: []int{400, 200}, H: 2, KVH: 1, D: 256, W: 128, bitwiseDet: true},
		})
	})
}

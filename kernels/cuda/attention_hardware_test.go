package cuda_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

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

// AttentionDecodeBatch uploads every cache to a buffer of its own (an
// empty one is none) and the table into a scratch buffer.
func (b deviceBackend) AttentionDecodeBatch(out, q, k, v []float32, kCache, vCache [][]float32, seqOff []int32, N, H, KVH, D, W int, scale float32) {
	kernels.NeedAttentionDecodeBatch("AttentionDecodeBatch", out, q, k, v, kCache, vCache, seqOff, N, H, KVH, D, W)
	b.call("AttentionDecodeBatch", func(buf func([]float32) *cuda.Buffer, ibuf func([]int32) *cuda.Buffer) error {
		S := len(seqOff) - 1
		kc, vc := make([]*cuda.Buffer, S), make([]*cuda.Buffer, S)
		for s := range S {
			if len(kCache[s]) > 0 {
				kc[s], vc[s] = buf(kCache[s]), buf(vCache[s])
			}
		}
		return b.ops.AttentionDecodeBatch(buf(out), buf(q), buf(k), buf(v), kc, vc, seqOff, ibuf(make([]int32, 8*max(S, 1))), H, KVH, D, W, scale)
	})
}

// attentionOnHardware runs kerneltest's attention groups on Ops, the shim
// test's wide-head shapes, and (not under -test.short) packed batches of
// the 7B shape's heads (D = 128) and Gemma 3's (D = 256, a 128-key
// window), each backward twice for the same bits; then it logs the
// kernels' speed (attentionSpeed).
func attentionOnHardware(t *testing.T, b deviceBackend) {
	kerneltest.RunOps(t, b, "Attention", "AttentionWindow", "AttentionDecode", "AttentionDecodeBatch")
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
	t.Run("speed", func(t *testing.T) {
		if testing.Short() {
			t.Skip("-test.short (run.sh's memcheck step): the small shapes only")
		}
		attentionSpeed(t, b)
	})
}

// attentionSpeed logs the time of the attention ops on the 7B
// training shape (Qwen2.5-7B's heads, 8 sequences of 1024 tokens) and of a
// decode step of the 0.5B shape over a 4096-row cache: a measurement, with
// no bound to meet yet (nothing to compare with in this test). The FLOP
// rate counts the forward's 4·D FLOPs per (query, key, head) visible, the
// backward's 8·D.
func attentionSpeed(t *testing.T, b deviceBackend) {
	r := rand.New(rand.NewPCG(28, 13))
	const B, T, H, KVH, D = 8, 1024, 28, 4, 128
	const N = B * T
	seqOff := make([]int32, B+1)
	for s := range seqOff {
		seqOff[s] = int32(s * T)
	}
	dev := b.dev
	bufs := map[string]*cuda.Buffer{}
	for name, n := range map[string]int{"q": N * H * D, "k": N * KVH * D, "v": N * KVH * D, "out": N * H * D, "lse": N * H,
		"dout": N * H * D, "dq": N * H * D, "dk": N * KVH * D, "dv": N * KVH * D} {
		bufs[name] = upload(t, dev, randn(r, n))
		defer bufs[name].Free()
	}
	so, err := dev.Alloc(B + 1)
	if err != nil {
		t.Fatal(err)
	}
	defer so.Free()
	if err := so.UploadInt32(seqOff); err != nil {
		t.Fatal(err)
	}
	scale := float32(1 / math.Sqrt(D))
	pairs := float64(B) * T * (T + 1) / 2 * H
	timeIt := func(what string, flops float64, f func() error) {
		if err := f(); err != nil { // warm-up (and the JIT)
			t.Fatalf("%s: %v", what, err)
		}
		download(t, bufs["lse"])
		const reps = 5
		start := time.Now()
		for range reps {
			if err := f(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
		download(t, bufs["lse"]) // waits for the queued launches
		per := time.Since(start) / reps
		t.Logf("%s: %v a call, %.2f TFLOP/s", what, per, flops/per.Seconds()/1e12)
	}
	x := bufs
	timeIt(fmt.Sprintf("AttentionForward B=%d,T=%d,H=%d,KVH=%d,D=%d", B, T, H, KVH, D), 4*D*pairs, func() error {
		return b.ops.AttentionForward(x["out"], x["lse"], x["q"], x["k"], x["v"], so, B, N, H, KVH, D, scale)
	})
	timeIt("AttentionBackward, same shape", 8*D*pairs, func() error {
		return b.ops.AttentionBackward(x["dq"], x["dk"], x["dv"], x["dout"], x["out"], x["lse"], x["q"], x["k"], x["v"], so, B, N, H, KVH, D, scale)
	})
	const Tk, dH, dKVH, dD = 4096, 14, 2, 64
	kc, vc := upload(t, dev, randn(r, Tk*dKVH*dD)), upload(t, dev, randn(r, Tk*dKVH*dD))
	defer kc.Free()
	defer vc.Free()
	dq, dout := upload(t, dev, randn(r, dH*dD)), upload(t, dev, randn(r, dH*dD))
	defer dq.Free()
	defer dout.Free()
	timeIt(fmt.Sprintf("AttentionDecode Tq=1,Tk=%d,H=%d,KVH=%d,D=%d", Tk, dH, dKVH, dD), 4*dD*Tk*dH, func() error {
		return b.ops.AttentionDecode(dout, dq, kc, vc, 1, Tk, dH, dKVH, dD, float32(1/math.Sqrt(dD)))
	})
}

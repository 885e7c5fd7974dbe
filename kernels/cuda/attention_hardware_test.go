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
// training shape (trainingAttentionSpeed, in b.ops's precision) and of a
// decode step of the 0.5B shape over a 4096-row cache: a measurement, with
// no bound to meet yet (nothing to compare with in this test).
func attentionSpeed(t *testing.T, b deviceBackend) {
	trainingAttentionSpeed(t, b)
	r := rand.New(rand.NewPCG(28, 13))
	dev := b.dev
	const Tk, dH, dKVH, dD = 4096, 14, 2, 64
	kc, vc := upload(t, dev, randn(r, Tk*dKVH*dD)), upload(t, dev, randn(r, Tk*dKVH*dD))
	defer kc.Free()
	defer vc.Free()
	dq, dout := upload(t, dev, randn(r, dH*dD)), upload(t, dev, randn(r, dH*dD))
	defer dq.Free()
	defer dout.Free()
	timeAttention(t, dout, fmt.Sprintf("AttentionDecode Tq=1,Tk=%d,H=%d,KVH=%d,D=%d", Tk, dH, dKVH, dD), 4*dD*Tk*dH, func() error {
		return b.ops.AttentionDecode(dout, dq, kc, vc, 1, Tk, dH, dKVH, dD, float32(1/math.Sqrt(dD)))
	})
}

// timeAttention logs the time of f a call (after a warm-up call, which
// also JIT-compiles), averaged over 5 calls, and its FLOP rate for flops a
// call; sync is a buffer downloaded to wait for the queued launches. It
// returns the time a call.
func timeAttention(t *testing.T, sync *cuda.Buffer, what string, flops float64, f func() error) time.Duration {
	t.Helper()
	if err := f(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	download(t, sync)
	const reps = 5
	start := time.Now()
	for range reps {
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	download(t, sync) // waits for the queued launches
	per := time.Since(start) / reps
	t.Logf("%s: %v a call, %.2f TFLOP/s", what, per, flops/per.Seconds()/1e12)
	return per
}

// trainingAttentionSpeed logs the time of AttentionForward and
// AttentionBackward on the 7B training shape (Qwen2.5-7B's heads, 8
// sequences of 1024 tokens) in b.ops's precision, and returns them. The
// FLOP rate counts the forward's 4·D FLOPs per (query, key, head) visible,
// the backward's 8·D.
func trainingAttentionSpeed(t *testing.T, b deviceBackend) (fwd, bwd time.Duration) {
	r := rand.New(rand.NewPCG(28, 13))
	const B, T, H, KVH, D = 8, 1024, 28, 4, 128
	const N = B * T
	seqOff := make([]int32, B+1)
	for s := range seqOff {
		seqOff[s] = int32(s * T)
	}
	dev := b.dev
	x := map[string]*cuda.Buffer{}
	for name, n := range map[string]int{"q": N * H * D, "k": N * KVH * D, "v": N * KVH * D, "out": N * H * D, "lse": N * H,
		"dout": N * H * D, "dq": N * H * D, "dk": N * KVH * D, "dv": N * KVH * D} {
		x[name] = upload(t, dev, randnPar(r, n, 1))
		defer x[name].Free()
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
	prec := b.ops.Precision().String()
	if b.ops.Precision() == kernels.PrecisionBF16 {
		prec += " " + b.ops.AttentionKernel()
	}
	fwd = timeAttention(t, x["lse"], fmt.Sprintf("AttentionForward (%s) B=%d,T=%d,H=%d,KVH=%d,D=%d", prec, B, T, H, KVH, D), 4*D*pairs, func() error {
		return b.ops.AttentionForward(x["out"], x["lse"], x["q"], x["k"], x["v"], so, B, N, H, KVH, D, scale)
	})
	bwd = timeAttention(t, x["lse"], fmt.Sprintf("AttentionBackward (%s), same shape", prec), 8*D*pairs, func() error {
		return b.ops.AttentionBackward(x["dq"], x["dk"], x["dv"], x["dout"], x["out"], x["lse"], x["q"], x["k"], x["v"], so, B, N, H, KVH, D, scale)
	})
	return fwd, bwd
}

// TestAttentionTCOnHardware runs attention_tc.cu's tensor-core kernels (Ops
// in kernels.PrecisionBF16) through tcOnHardware's checks, then logs the
// speed of the training attention on the 7B shape with the float32 kernels
// and with the tensor-core ones, side by side.
func TestAttentionTCOnHardware(t *testing.T) {
	tcOnHardware(t, cuda.AttentionTC1, func(t *testing.T, ops *cuda.Ops, b deviceBackend) {
		if err := ops.SetPrecision(kernels.PrecisionF32); err != nil {
			t.Fatal(err)
		}
		f32Fwd, f32Bwd := trainingAttentionSpeed(t, b)
		if err := ops.SetPrecision(kernels.PrecisionBF16); err != nil {
			t.Fatal(err)
		}
		tcFwd, tcBwd := trainingAttentionSpeed(t, b)
		t.Logf("7B shape, tensor cores (bf16) against float32 kernels: forward %v vs %v (%.1f×), backward %v vs %v (%.1f×)",
			tcFwd, f32Fwd, f32Fwd.Seconds()/tcFwd.Seconds(), tcBwd, f32Bwd, f32Bwd.Seconds()/tcBwd.Seconds())
	})
}

// TestAttentionTC2OnHardware runs attention_fa2.cu's kernels (Ops in
// kernels.PrecisionBF16 with SetAttentionKernel("tc2")) through the same
// checks as tc1's, then times the training attention on the 7B shape with
// tc1 and with tc2 side by side (which of the two should be the default is
// this log's to say).
func TestAttentionTC2OnHardware(t *testing.T) {
	tcOnHardware(t, cuda.AttentionTC2, func(t *testing.T, ops *cuda.Ops, b deviceBackend) {
		if err := ops.SetAttentionKernel(cuda.AttentionTC1); err != nil {
			t.Fatal(err)
		}
		tc1Fwd, tc1Bwd := trainingAttentionSpeed(t, b)
		if err := ops.SetAttentionKernel(cuda.AttentionTC2); err != nil {
			t.Fatal(err)
		}
		tc2Fwd, tc2Bwd := trainingAttentionSpeed(t, b)
		t.Logf("7B shape, tc2 (attention_fa2.cu) against tc1 (attention_tc.cu): forward %v vs %v (%.2f×), backward %v vs %v (%.2f×)",
			tc2Fwd, tc1Fwd, tc1Fwd.Seconds()/tc2Fwd.Seconds(), tc2Bwd, tc1Bwd, tc1Bwd.Seconds()/tc2Bwd.Seconds())
	})
}

// TestAttentionTC3OnHardware runs attention_mma.cu's kernels (Ops in
// kernels.PrecisionBF16 with SetAttentionKernel("tc3"): mma.sync on
// register fragments) through the same checks as tc1's, and the same with
// the 64-row tiles ("tc3k64", 68 and 84 KiB of dynamic shared memory),
// whose forward it also checks against the 32-key one's and whose backward
// for the same bits as tc3's (tc3TilesAgree); then it times the training attention on the 7B shape
// with tc1, tc2, tc3, tc3k64 and gemm side by side
// (attentionKernelSpeeds): which should be the default is this log's to
// say.
func TestAttentionTC3OnHardware(t *testing.T) {
	t.Run("tc3k64", func(t *testing.T) {
		tcOnHardware(t, cuda.AttentionTC3K64, nil) // timed with tc3's below
		dev, ops := openBF16Ops(t)
		b := deviceBackend{dev: dev, ops: ops}
		t.Run("against 32-key tiles", func(t *testing.T) {
			tc3TilesAgree(t, attnKernelBF16{deviceBF16{b}, cuda.AttentionTC3}, attnKernelBF16{deviceBF16{b}, cuda.AttentionTC3K64}, tc3TileCases)
		})
	})
	tcOnHardware(t, cuda.AttentionTC3, func(t *testing.T, ops *cuda.Ops, b deviceBackend) {
		fwd, bwd := attentionKernelSpeeds(t, ops, b)
		for _, me := range []int{2, 3} {
			for i, k := range attentionKernels {
				if i == me {
					continue
				}
				t.Logf("7B shape, %s (attention_mma.cu) against %s: forward %v vs %v (%.2f×), backward %v vs %v (%.2f×)",
					attentionKernels[me], k, fwd[me], fwd[i], fwd[i].Seconds()/fwd[me].Seconds(), bwd[me], bwd[i], bwd[i].Seconds()/bwd[me].Seconds())
			}
		}
	})
}

// attnKernelBF16 is deviceBF16 whose attention picks kernel first
// (Ops.SetAttentionKernel), so that two of them on one Ops compare two
// attentions.
type attnKernelBF16 struct {
	deviceBF16
	kernel string
}

func (b attnKernelBF16) AttentionWindowForward(out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D, W int, scale float32) {
	if err := b.ops.SetAttentionKernel(b.kernel); err != nil {
		panic(err)
	}
	b.deviceBF16.AttentionWindowForward(out, lse, q, k, v, seqOff, N, H, KVH, D, W, scale)
}

// attentionKernels are the bf16 training attentions attentionKernelSpeeds
// times, in its order: tc1, tc2, tc3, tc3k64, gemm.
var attentionKernels = [5]string{cuda.AttentionTC1, cuda.AttentionTC2, cuda.AttentionTC3, cuda.AttentionTC3K64, cuda.AttentionGEMM}

// attentionKernelSpeeds times the training attention on the 7B shape
// (trainingAttentionSpeed) with each of attentionKernels in turn, on the
// same device and buffers, and logs each; it leaves ops on the last.
func attentionKernelSpeeds(t *testing.T, ops *cuda.Ops, b deviceBackend) (fwd, bwd [5]time.Duration) {
	for i, k := range attentionKernels {
		if err := ops.SetAttentionKernel(k); err != nil {
			t.Fatal(err)
		}
		fwd[i], bwd[i] = trainingAttentionSpeed(t, b)
	}
	return fwd, bwd
}

// TestAttentionGEMMOnHardware runs the GEMM attention (Ops in
// kernels.PrecisionBF16 with SetAttentionKernel("gemm"): batched cuBLAS
// GemmEx around attention_gemm.cu) through the same checks as tc1's, then
// times the training attention on the 7B shape with tc1, tc2, tc3, tc3k64 and gemm
// side by side (attentionKernelSpeeds), and the rate of gemm's GEMM FLOPs
// as its plans count them (row blocks: the causal upper triangle is not
// multiplied; the rate is over the op's whole time, the kernels between
// the GEMMs included). Its Ops calls hold seqOff on the device only, so
// each reads the offsets back (one small copy, in the timed calls too).
func TestAttentionGEMMOnHardware(t *testing.T) {
	tcOnHardware(t, cuda.AttentionGEMM, func(t *testing.T, ops *cuda.Ops, b deviceBackend) {
		fwd, bwd := attentionKernelSpeeds(t, ops, b)
		const g = 4 // gemm's index in attentionKernels
		t.Logf("7B shape, gemm against tc1, tc2, tc3 and tc3k64: forward %v vs %v (%.2f×), %v (%.2f×), %v (%.2f×) and %v (%.2f×), backward %v vs %v (%.2f×), %v (%.2f×), %v (%.2f×) and %v (%.2f×)",
			fwd[g], fwd[0], fwd[0].Seconds()/fwd[g].Seconds(), fwd[1], fwd[1].Seconds()/fwd[g].Seconds(), fwd[2], fwd[2].Seconds()/fwd[g].Seconds(), fwd[3], fwd[3].Seconds()/fwd[g].Seconds(),
			bwd[g], bwd[0], bwd[0].Seconds()/bwd[g].Seconds(), bwd[1], bwd[1].Seconds()/bwd[g].Seconds(), bwd[2], bwd[2].Seconds()/bwd[g].Seconds(), bwd[3], bwd[3].Seconds()/bwd[g].Seconds())
		// trainingAttentionSpeed's shape.
		const B, T, H, KVH, D = 8, 1024, 28, 4, 128
		off := make([]int32, B+1)
		for s := range off {
			off[s] = int32(s * T)
		}
		fp, bp, _ := gemmPlans(t, off, H, KVH, D, B*T, cuda.AttnGEMMBlock)
		ff, bf := float64(gemmPlanFLOPs(fp)), float64(gemmPlanFLOPs(bp))
		t.Logf("7B shape, gemm in row blocks of %d: its plans' GEMMs %.1f GFLOP forward, %.1f backward; %.0f and %.0f TFLOP/s over the ops' times",
			cuda.AttnGEMMBlock, ff/1e9, bf/1e9, ff/fwd[g].Seconds()/1e12, bf/bwd[g].Seconds()/1e12)
	})
}

// openBF16Ops opens device 0 (openHardware) and loads its Ops in
// kernels.PrecisionBF16; both are unloaded and closed when t ends.
func openBF16Ops(t *testing.T) (*cuda.Device, *cuda.Ops) {
	t.Helper()
	dev := openHardware(t)
	t.Cleanup(func() { dev.Close() })
	ops, err := dev.LoadOps()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ops.Unload(); err != nil {
			t.Error(err)
		}
	})
	if err := ops.SetPrecision(kernels.PrecisionBF16); err != nil {
		t.Fatal(err)
	}
	return dev, ops
}

// tcOnHardware runs, on the device's Ops in kernels.PrecisionBF16 with the
// attention kernels named kernel: kerneltest's attention groups at the bf16
// mode's bounds, the shim test's cases against kernels/ref, and (not under
// -test.short, run.sh's memcheck step) packed batches of the 7B shape's
// heads (D = 128, GQA) and of D = 64 with a window, each backward twice for
// the same bits; then speed (unless nil), also not under -test.short.
func tcOnHardware(t *testing.T, kernel string, speed func(t *testing.T, ops *cuda.Ops, b deviceBackend)) {
	dev, ops := openBF16Ops(t)
	if err := ops.SetAttentionKernel(kernel); err != nil {
		t.Fatal(err)
	}
	b := deviceBF16{deviceBackend{dev: dev, ops: ops}}
	kerneltest.RunOps(t, b, "Attention", "AttentionWindow", "AttentionDecode")
	t.Run("against ref", func(t *testing.T) { attentionTCAgainstRef(t, b, attnTCCases) })
	t.Run("long sequences", func(t *testing.T) {
		if testing.Short() {
			t.Skip("-test.short (run.sh's memcheck step): the small shapes only")
		}
		attentionTCAgainstRef(t, b, []attnCase{
			{lens: []int{513, 300, 211}, H: 7, KVH: 1, D: 128, bitwiseDet: true},
			{lens: []int{400, 200}, H: 4, KVH: 2, D: 64, W: 128, bitwiseDet: true},
		})
	})
	t.Run("speed", func(t *testing.T) {
		if speed == nil {
			t.Skip("timed elsewhere")
		}
		if testing.Short() {
			t.Skip("-test.short (run.sh's memcheck step): the small shapes only")
		}
		speed(t, ops, b.deviceBackend)
	})
}

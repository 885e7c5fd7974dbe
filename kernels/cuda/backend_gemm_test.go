package cuda_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/kerneltest"
)

// TestBackendBF16AttentionGEMM is TestBackendBF16AttentionTC2 with the GEMM
// attention picked (SetAttentionKernel("gemm")): kerneltest's attention
// groups on the emulated device launch attention_gemm.cu's kernels around
// cublasGemmStridedBatchedEx calls on bfloat16 operands (float32 C,
// CUBLAS_COMPUTE_32F), none of the tensor-core kernels, and keep the
// GEMM attention's scratch in Ops' store between calls.
func TestBackendBF16AttentionGEMM(t *testing.T) {
	t.Parallel()
	b, drv, blas := emulatedBackendIn(t, kernels.PrecisionBF16)
	defer b.Close()
	if err := b.SetAttentionKernel(cuda.AttentionGEMM); err != nil {
		t.Fatal(err)
	}
	n0, g0 := len(drv.Launches()), len(blas.Gemms())
	kerneltest.RunOps(t, b, "Attention", "AttentionWindow", "AttentionDecode")
	var launched []string
	for _, l := range drv.Launches()[n0:] {
		launched = append(launched, l.Kernel)
	}
	for _, k := range []string{"attention_gemm_gather", "attention_gemm_softmax", "attention_gemm_scatter", "attention_gemm_dsoftmax", "attention_forward"} {
		if !slices.Contains(launched, k) {
			t.Errorf("the attention groups in bf16 with gemm launched no %s", k)
		}
	}
	for _, k := range []string{"attention_tc_forward", "attention_tc_backward_dq", "attention_fa2_forward"} {
		if slices.Contains(launched, k) {
			t.Errorf("the attention groups in bf16 with gemm launched %s", k)
		}
	}
	gs, ty := blas.Gemms()[g0:], blas.GemmTypes()[g0:]
	b16 := cuda.GemmTypes{A: cuda.R16BF, B: cuda.R16BF, C: cuda.R32F, Compute: cuda.Compute32F}
	batched := 0
	for i, g := range gs {
		if ty[i] != b16 {
			t.Errorf("GEMM %d of the attention: types %+v, want %+v", i, ty[i], b16)
		}
		if g.Batch > 1 {
			batched++
		}
	}
	if len(gs) == 0 || batched == 0 {
		t.Errorf("%d GEMMs, %d batched: want the products as strided-batched GemmEx", len(gs), batched)
	}
	if n, _ := b.Ops().ScratchLive(); n != 12 {
		t.Errorf("Ops holds %d scratch buffers after the GEMM attention, want its 12 (scratch.go slots)", n)
	}
}

// TestOpsAttentionGEMMDeviceOffsets: Ops' own AttentionForward and
// AttentionBackward (seqOff only on the device) read the offsets back to
// size the GEMM attention's runs and give the bits cuda.Backend gives with
// the offsets on the host; offsets that are not 0 … N come back as an
// error naming the op.
func TestOpsAttentionGEMMDeviceOffsets(t *testing.T) {
	t.Parallel()
	b, _, _ := emulatedBackendIn(t, kernels.PrecisionBF16)
	defer b.Close()
	if err := b.SetAttentionKernel(cuda.AttentionGEMM); err != nil {
		t.Fatal(err)
	}
	const N, H, KVH, D = 11, 4, 2, 16
	seqOff := []int32{0, 7, N}
	r := rand.New(rand.NewPCG(28, 45))
	q, k, v, dout := randn(r, N*H*D), randn(r, N*KVH*D), randn(r, N*KVH*D), randn(r, N*H*D)
	managed := func(x []float32) []float32 {
		y, err := kernels.AllocF32(b, len(x))
		if err != nil {
			t.Fatal(err)
		}
		copy(y, x)
		return y
	}
	// Through the backend (host offsets).
	mq, mk, mv, md := managed(q), managed(k), managed(v), managed(dout)
	out, lse := managed(make([]float32, N*H*D)), managed(make([]float32, N*H))
	b.AttentionForward(out, lse, mq, mk, mv, seqOff, N, H, KVH, D, 0.25)
	dq, dk, dv := managed(make([]float32, N*H*D)), managed(make([]float32, N*KVH*D)), managed(make([]float32, N*KVH*D))
	b.AttentionBackward(dq, dk, dv, md, out, lse, mq, mk, mv, seqOff, N, H, KVH, D, 0.25)

	// Through Ops on device buffers.
	dev, o := b.Device(), b.Ops()
	up := func(x []float32) *cuda.Buffer { return upload(t, dev, x) }
	off, err := dev.Alloc(len(seqOff))
	if err != nil {
		t.Fatal(err)
	}
	if err := off.UploadInt32(seqOff); err != nil {
		t.Fatal(err)
	}
	bq, bk, bv, bd := up(q), up(k), up(v), up(dout)
	bo, bl := up(make([]float32, N*H*D)), up(make([]float32, N*H))
	if err := o.AttentionForward(bo, bl, bq, bk, bv, off, 2, N, H, KVH, D, 0.25); err != nil {
		t.Fatal(err)
	}
	bdq, bdk, bdv := up(make([]float32, N*H*D)), up(make([]float32, N*KVH*D)), up(make([]float32, N*KVH*D))
	if err := o.AttentionBackward(bdq, bdk, bdv, bd, bo, bl, bq, bk, bv, off, 2, N, H, KVH, D, 0.25); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want []float32
	}{{"out", download(t, bo), out}, {"lse", download(t, bl), lse}, {"dq", download(t, bdq), dq}, {"dk", download(t, bdk), dk}, {"dv", download(t, bdv), dv}} {
		for i := range c.want {
			if math.Float32bits(c.got[i]) != math.Float32bits(c.want[i]) {
				t.Fatalf("%s[%d]: %g through Ops, %g through the backend", c.name, i, c.got[i], c.want[i])
			}
		}
	}
	if err := off.UploadInt32([]int32{0, 9, 5}); err != nil {
		t.Fatal(err)
	}
	if err := o.AttentionForward(bo, bl, bq, bk, bv, off, 2, N, H, KVH, D, 0.25); err == nil || !strings.Contains(err.Error(), "CUDA AttentionForward: seqOff [0 9 5]") {
		t.Errorf("offsets not ending at N: %v", err)
	}
}

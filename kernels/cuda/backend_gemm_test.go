package cuda_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/cudafake"
	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
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
	g0 := len(blas.Gemms())
	checkLaunched(t, "gemm", attentionGroupLaunches(t, b, drv),
		[]string{"attention_gemm_gather", "attention_gemm_softmax", "attention_gemm_scatter", "attention_gemm_dsoftmax", "attention_forward"},
		[]string{"attention_tc_forward", "attention_tc_backward_dq", "attention_fa2_forward"})
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
	if n, _ := b.Ops().ScratchLive(); n != 13 {
		t.Errorf("Ops holds %d scratch buffers after the GEMM attention, want its 13 (scratch.go slots)", n)
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
	managed := func(x []float32) []float32 { return managedCopy(t, b, x) }
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

// TestBackendGEMMRunsAndFallback: with the score scratch bounded at two
// entries of the longest sequence, the GEMM attention takes two runs
// (the shorter sequences padded less) through the same scratch and gives
// the bits of one run (the fake cuBLAS computes each product alone, and
// padding adds exact zeros). Bounded below one entry's whole square, it
// still takes the sequences in row blocks of 8 positions (before row
// blocks, such a sequence fell back to tc1): out, lse and dq with the bits
// of one block (a row's keys past its block add exact zeros), dk and dv
// summed over the blocks in float32, close to them. Bounded below one
// entry's largest row block, the ops run tc1, with tc1's bits, and the
// profile says so.
func TestBackendGEMMRunsAndFallback(t *testing.T) {
	t.Parallel()
	b, drv, blas := emulatedBackendIn(t, kernels.PrecisionBF16)
	defer b.Close()
	const N, H, KVH, D = 20, 4, 2, 16
	seqOff := []int32{0, 7, 11, N} // the longest 9, padded to 16
	const entry = 12 * (H / KVH) * 16 * 16
	r := rand.New(rand.NewPCG(28, 46))
	q, k, v, dout := randn(r, N*H*D), randn(r, N*KVH*D), randn(r, N*KVH*D), randn(r, N*H*D)
	managed := func(x []float32) []float32 { return managedCopy(t, b, x) }
	mq, mk, mv, md := managed(q), managed(k), managed(v), managed(dout)
	// run returns out, lse, dq, dk, dv of a forward and backward with the
	// kernel, score bound and row block given (0: the defaults), the
	// profile's op names, and the batch sizes of the GEMMs.
	run := func(kernel string, scoreBytes, block int) ([5][]float32, []string, []int) {
		if err := b.SetAttentionKernel(kernel); err != nil {
			t.Fatal(err)
		}
		b.Ops().SetGEMMScoreBytes(scoreBytes)
		b.Ops().SetGEMMRowBlock(block)
		out, lse := managed(make([]float32, N*H*D)), managed(make([]float32, N*H))
		dq, dk, dv := managed(make([]float32, N*H*D)), managed(make([]float32, N*KVH*D)), managed(make([]float32, N*KVH*D))
		g0 := len(blas.Gemms())
		b.StartProfile()
		b.AttentionWindowForward(out, lse, mq, mk, mv, seqOff, N, H, KVH, D, 5, 0.25)
		b.AttentionWindowBackward(dq, dk, dv, md, out, lse, mq, mk, mv, seqOff, N, H, KVH, D, 5, 0.25)
		var ops []string
		for _, o := range b.StopProfile() {
			ops = append(ops, o.Op)
		}
		slices.Sort(ops)
		var batches []int
		for _, g := range blas.Gemms()[g0:] {
			batches = append(batches, g.Batch)
		}
		return [5][]float32{slices.Clone(out), slices.Clone(lse), slices.Clone(dq), slices.Clone(dk), slices.Clone(dv)}, ops, batches
	}
	same := func(a, b [5][]float32, n int) bool {
		for i := range n {
			for j := range a[i] {
				if math.Float32bits(a[i][j]) != math.Float32bits(b[i][j]) {
					return false
				}
			}
		}
		return true
	}
	gemmOps := []string{"AttentionWindowBackward (gemm)", "AttentionWindowForward (gemm)"}
	one, ops, batches := run(cuda.AttentionGEMM, 0, 0)
	if !slices.Equal(ops, gemmOps) {
		t.Errorf("one run: profile %v, want %v", ops, gemmOps)
	}
	if want := []int{6, 6, 6, 6, 6, 6, 6}; !slices.Equal(batches, want) { // forward 2, backward 5
		t.Errorf("one run: GEMM batches %v, want %v", batches, want)
	}
	// Bounded at two entries of 16: the longest sequence's 2 entries in
	// one run, the 4 of the other two (padded to 8, a quarter of the cost
	// each) in another.
	two, _, batches := run(cuda.AttentionGEMM, 2*entry+1, 0)
	if want := []int{2, 2, 4, 4, 2, 2, 2, 2, 2, 4, 4, 4, 4, 4}; !slices.Equal(batches, want) {
		t.Errorf("runs within two entries: GEMM batches %v, want %v", batches, want)
	}
	if !same(one, two, 5) {
		t.Errorf("two runs give other bits than one run")
	}
	// Bounded below one entry of 16 (the whole square), in row blocks of
	// 8: an entry of 16 costs its second block, 8 rows × 16 keys, half the
	// square, so each takes a run of its own, and the 4 entries of 8 (a
	// block each, a quarter of the square) a run of 3 and one of 1:
	// forward 2 blocks × 2 GEMMs for each of the 2 runs of 16, then 2 and
	// 2; backward 5 GEMMs a block.
	blocks, ops, batches := run(cuda.AttentionGEMM, entry-1, 8)
	if !slices.Equal(ops, gemmOps) {
		t.Errorf("past the square's bound, in row blocks: profile %v, want %v", ops, gemmOps)
	}
	want := slices.Concat(slices.Repeat([]int{1}, 2*2*2), []int{3, 3, 1, 1}, slices.Repeat([]int{1}, 2*2*5), []int{3, 3, 3, 3, 3, 1, 1, 1, 1, 1})
	if !slices.Equal(batches, want) {
		t.Errorf("past the square's bound, in row blocks: GEMM batches %v, want %v", batches, want)
	}
	if !same(one, blocks, 3) {
		t.Errorf("row blocks give out, lse or dq other bits than one block")
	}
	for i, name := range []string{"dk", "dv"} {
		if e := kerneltest.RelErr(blocks[3+i], one[3+i]); !(e < 1e-6) {
			t.Errorf("row blocks: %s at %.3g of one block's", name, e)
		}
	}
	n0 := len(drv.Launches())
	fell, ops, batches := run(cuda.AttentionGEMM, 12*(H/KVH)*8*16-1, 8)
	if want := []string{"AttentionWindowBackward (tc1)", "AttentionWindowForward (tc1)"}; !slices.Equal(ops, want) || len(batches) != 0 {
		t.Errorf("no entry's row block fits: profile %v, GEMM batches %v; want tc1's ops and no GEMM", ops, batches)
	}
	if l := drv.Launches()[n0:]; len(l) == 0 || !slices.ContainsFunc(l, func(x cudafake.Launch) bool { return x.Kernel == "attention_tc_forward" }) {
		t.Errorf("no entry fits: launched no attention_tc_forward")
	}
	tc1, _, _ := run(cuda.AttentionTC1, 0, 0)
	if !same(fell, tc1, 5) {
		t.Errorf("the fallback gives other bits than tc1")
	}
}

// TestOpsAttentionGEMMOrderCopiedOnce: the GEMM attention uploads its order
// of the sequences (one cuMemcpyHtoD) only when its slot does not hold it
// already: the same offsets again, forward or backward, copy nothing;
// offsets whose order differs copy it again, and the op then reads the new
// order (runs of unequal padded length, so a stale order would truncate the
// long sequence: out against ref on the bfloat16-rounded inputs).
func TestOpsAttentionGEMMOrderCopiedOnce(t *testing.T) {
	t.Parallel()
	b, drv, _ := emulatedBackendIn(t, kernels.PrecisionBF16)
	defer b.Close()
	if err := b.SetAttentionKernel(cuda.AttentionGEMM); err != nil {
		t.Fatal(err)
	}
	const N, H, KVH, D = 24, 4, 2, 16
	// One entry of 24 a run (12·2·24² bytes), the two entries of 8 in one.
	b.Ops().SetGEMMScoreBytes(12 * (H / KVH) * 24 * 24)
	r := rand.New(rand.NewPCG(28, 47))
	q, k, v, dout := randn(r, N*H*D), randn(r, N*KVH*D), randn(r, N*KVH*D), randn(r, N*H*D)
	dev, o := b.Device(), b.Ops()
	up := func(x []float32) *cuda.Buffer { return upload(t, dev, x) }
	off, err := dev.Alloc(3)
	if err != nil {
		t.Fatal(err)
	}
	bq, bk, bv, bd := up(q), up(k), up(v), up(dout)
	bo, bl := up(make([]float32, N*H*D)), up(make([]float32, N*H))
	bdq, bdk, bdv := up(make([]float32, N*H*D)), up(make([]float32, N*KVH*D)), up(make([]float32, N*KVH*D))
	const htod = "cuMemcpyHtoD_v2"
	// pass uploads seqOff and runs what calls with it, returning the
	// copies to the device the ops made (the upload of seqOff not counted).
	pass := func(seqOff []int32, calls ...string) int {
		if err := off.UploadInt32(seqOff); err != nil {
			t.Fatal(err)
		}
		n0 := drv.Calls(htod)
		for _, c := range calls {
			var err error
			if c == "forward" {
				err = o.AttentionForward(bo, bl, bq, bk, bv, off, 2, N, H, KVH, D, 0.25)
			} else {
				err = o.AttentionBackward(bdq, bdk, bdv, bd, bo, bl, bq, bk, bv, off, 2, N, H, KVH, D, 0.25)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		return drv.Calls(htod) - n0
	}
	if n := pass([]int32{0, 20, N}, "forward"); n != 1 {
		t.Errorf("the first forward made %d copies to the device, want the order's 1", n)
	}
	if n := pass([]int32{0, 20, N}, "forward", "backward", "forward"); n != 0 {
		t.Errorf("the same offsets again made %d copies to the device, want none", n)
	}
	seqOff := []int32{0, 4, N} // the order reversed
	if n := pass(seqOff, "forward"); n != 1 {
		t.Errorf("offsets of another order made %d copies to the device, want the order's 1", n)
	}
	want, wl := make([]float32, N*H*D), make([]float32, N*H)
	ref.New().AttentionForward(want, wl, roundBF16(q), roundBF16(k), roundBF16(v), seqOff, N, H, KVH, D, 0.25)
	if e := kerneltest.RelErr(download(t, bo), want); !(e <= tcOutTol) {
		t.Errorf("out after the order changed: %.3g from ref's, want at most %g", e, tcOutTol)
	}
}

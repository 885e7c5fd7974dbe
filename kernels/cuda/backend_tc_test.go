package cuda_test

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/cudafake"
	"github.com/hone-rl/hone/kernels/kerneltest"
)

// TestBackendBF16Attention runs kerneltest's attention groups on
// cuda.Backend computing in PrecisionBF16 on the emulated device, where
// the training attention of head dims 16 and 64 runs attention_tc.cu's
// tensor-core kernels (the others, and decode, the float32 ones).
func TestBackendBF16Attention(t *testing.T) {
	t.Parallel()
	b, drv, _ := emulatedBackendIn(t, kernels.PrecisionBF16)
	defer b.Close()
	checkLaunched(t, "tc1 (the default)", attentionGroupLaunches(t, b, drv),
		[]string{"attention_tc_forward", "attention_tc_backward_dq", "attention_tc_backward_dkdv", "attention_forward"}, nil)
}

// TestBackendBF16AttentionFallback: in PrecisionBF16, a head dim the
// tensor-core kernels do not take (8, the qwen2 model golden's) runs the
// float32 kernels, bit for bit what PrecisionF32 gives; D = 16 runs the
// tensor-core ones, which round q, k and v (different bits; their values
// are TestBackendBF16Attention's and TestAttentionTCOnCPUShim's).
func TestBackendBF16AttentionFallback(t *testing.T) {
	t.Parallel()
	bf, drv, _ := emulatedBackendIn(t, kernels.PrecisionBF16)
	defer bf.Close()
	f32, _, _ := emulatedBackendIn(t, kernels.PrecisionF32)
	defer f32.Close()
	const H, KVH = 7, 1
	seqOff := []int32{0, 9, 20}
	N := int(seqOff[len(seqOff)-1])
	for _, D := range []int{8, 16} {
		r := rand.New(rand.NewPCG(28, uint64(D)))
		q, k, v, dout := randn(r, N*H*D), randn(r, N*KVH*D), randn(r, N*KVH*D), randn(r, N*H*D)
		scale := float32(1 / math.Sqrt(float64(D)))
		// run returns out, lse, dq, dk, dv of b, and the kernels it launched.
		run := func(b kernels.Backend) [5][]float32 {
			buf := func(x []float32) []float32 { return managedCopy(t, b, x) }
			out, lse := buf(make([]float32, N*H*D)), buf(make([]float32, N*H))
			bq, bk, bv, bd := buf(q), buf(k), buf(v), buf(dout)
			b.AttentionForward(out, lse, bq, bk, bv, seqOff, N, H, KVH, D, scale)
			dq, dk, dv := buf(make([]float32, N*H*D)), buf(make([]float32, N*KVH*D)), buf(make([]float32, N*KVH*D))
			b.AttentionBackward(dq, dk, dv, bd, out, lse, bq, bk, bv, seqOff, N, H, KVH, D, scale)
			return [5][]float32{slices.Clone(out), slices.Clone(lse), slices.Clone(dq), slices.Clone(dk), slices.Clone(dv)}
		}
		n0 := len(drv.Launches())
		got := run(bf)
		launched := launchedKernels(drv.Launches()[n0:])
		want := run(f32)
		same := true
		for i := range got {
			for j := range got[i] {
				same = same && math.Float32bits(got[i][j]) == math.Float32bits(want[i][j])
			}
		}
		tc := slices.Contains(launched, "attention_tc_forward")
		switch {
		case D == 8 && (tc || !same):
			t.Errorf("D = 8 in bf16: launched %v, same bits as f32: %v; want the float32 kernels' bits", launched, same)
		case D == 16 && (!tc || same):
			t.Errorf("D = 16 in bf16: launched %v, same bits as f32: %v; want the tensor-core kernels", launched, same)
		}
	}
}

// bf16AttentionLaunches runs kerneltest's attention groups on the
// emulated device in the bf16 precision with the training attention
// kernel picked (SetAttentionKernel) and returns the launches they made.
func bf16AttentionLaunches(t *testing.T, kernel string) []cudafake.Launch {
	b, drv, _ := emulatedBackendIn(t, kernels.PrecisionBF16)
	defer b.Close()
	if err := b.SetAttentionKernel(kernel); err != nil {
		t.Fatal(err)
	}
	return attentionGroupLaunches(t, b, drv)
}

// attentionGroupLaunches runs kerneltest's attention groups (training,
// windowed and decode) on b and returns the launches they made on drv, b's
// driver: what the attention tests check their kernels against.
func attentionGroupLaunches(t *testing.T, b *cuda.Backend, drv *cudafake.Driver) []cudafake.Launch {
	t.Helper()
	n0 := len(drv.Launches())
	kerneltest.RunOps(t, b, "Attention", "AttentionWindow", "AttentionDecode")
	return drv.Launches()[n0:]
}

// launchedKernels lists the kernels of launches by name, in launch order.
func launchedKernels(launches []cudafake.Launch) []string {
	var names []string
	for _, l := range launches {
		names = append(names, l.Kernel)
	}
	return names
}

// checkLaunched fails t unless launches hold every kernel of want and
// none of not.
func checkLaunched(t *testing.T, kernel string, launches []cudafake.Launch, want, not []string) {
	t.Helper()
	launched := launchedKernels(launches)
	for _, k := range want {
		if !slices.Contains(launched, k) {
			t.Errorf("the attention groups in bf16 with %s launched no %s", kernel, k)
		}
	}
	for _, k := range not {
		if slices.Contains(launched, k) {
			t.Errorf("the attention groups in bf16 with %s launched %s", kernel, k)
		}
	}
}

// TestBackendBF16AttentionTC2 is TestBackendBF16Attention with the second
// tensor-core attention picked (SetAttentionKernel("tc2")): kerneltest's
// attention groups on the emulated device launch attention_fa2.cu's
// kernels, and none of attention_tc.cu's.
func TestBackendBF16AttentionTC2(t *testing.T) {
	t.Parallel()
	checkLaunched(t, "tc2", bf16AttentionLaunches(t, cuda.AttentionTC2),
		[]string{"attention_fa2_forward", "attention_fa2_delta", "attention_fa2_backward_dq", "attention_fa2_backward_dkdv", "attention_forward"},
		[]string{"attention_tc_forward", "attention_tc_backward_dq", "attention_tc_backward_dkdv"})
}

// TestBackendBF16AttentionTC3 is TestBackendBF16AttentionTC2 with the
// third tensor-core attention picked (SetAttentionKernel("tc3")):
// kerneltest's attention groups on the emulated device launch
// attention_mma.cu's kernels (and tc2's δ pass), and none of
// attention_tc.cu's or of tc2's forward, dq and dkdv.
func TestBackendBF16AttentionTC3(t *testing.T) {
	t.Parallel()
	checkLaunched(t, "tc3", bf16AttentionLaunches(t, cuda.AttentionTC3),
		[]string{"attention_mma_forward", "attention_fa2_delta", "attention_mma_backward_dq", "attention_mma_backward_dkdv", "attention_forward"},
		[]string{"attention_tc_forward", "attention_tc_backward_dq", "attention_tc_backward_dkdv", "attention_fa2_forward", "attention_fa2_backward_dq", "attention_fa2_backward_dkdv"})
}

// TestBackendBF16AttentionTC3K64 is TestBackendBF16AttentionTC3 with tc3's
// 64-row tiles (SetAttentionKernel("tc3k64")): the groups launch
// attention_mma_forward_k64, attention_mma_backward_dq_k64 and
// attention_mma_backward_dkdv_k64 with their 68, 84 and 84 KiB of dynamic
// shared memory (the emulated driver refuses more than 48 KiB unless the
// kernel was opted in), not tc3's 32-row kernels.
func TestBackendBF16AttentionTC3K64(t *testing.T) {
	t.Parallel()
	launches := bf16AttentionLaunches(t, cuda.AttentionTC3K64)
	for _, l := range launches {
		if want := map[string]int{"attention_mma_forward_k64": 68 << 10, "attention_mma_backward_dq_k64": 84 << 10, "attention_mma_backward_dkdv_k64": 84 << 10}[l.Kernel]; want > 0 && l.SharedBytes != want {
			t.Errorf("%s launched with %d bytes of dynamic shared memory, want %d", l.Kernel, l.SharedBytes, want)
		}
	}
	checkLaunched(t, "tc3k64", launches,
		[]string{"attention_mma_forward_k64", "attention_fa2_delta", "attention_mma_backward_dq_k64", "attention_mma_backward_dkdv_k64"},
		[]string{"attention_mma_forward", "attention_mma_backward_dq", "attention_mma_backward_dkdv"})
}

// TestSetAttentionKernel: "tc1" and "" pick attention_tc.cu, "tc2"
// attention_fa2.cu, "tc3" attention_mma.cu ("tc3k64" with its 64-key
// forward), "gemm" the GEMM attention; another name is an error that names the choices and
// leaves the choice as it was.
func TestSetAttentionKernel(t *testing.T) {
	t.Parallel()
	b, _, _ := emulatedBackendIn(t, kernels.PrecisionBF16)
	defer b.Close()
	if got := b.AttentionKernel(); got != cuda.AttentionTC1 {
		t.Errorf("default attention kernel %q, want %q", got, cuda.AttentionTC1)
	}
	for _, c := range []struct{ set, want string }{{"tc2", "tc2"}, {"", "tc1"}, {"tc2", "tc2"}, {"tc1", "tc1"}, {"tc3", "tc3"}, {"tc3k64", "tc3k64"}, {"gemm", "gemm"}, {"tc1", "tc1"}} {
		if err := b.SetAttentionKernel(c.set); err != nil {
			t.Fatalf("SetAttentionKernel(%q): %v", c.set, err)
		}
		if got := b.AttentionKernel(); got != c.want {
			t.Errorf("after SetAttentionKernel(%q): %q, want %q", c.set, got, c.want)
		}
	}
	err := b.SetAttentionKernel("fa3")
	if err == nil || !strings.Contains(err.Error(), `"fa3"`) || !strings.Contains(err.Error(), `"tc2"`) || !strings.Contains(err.Error(), `"tc3"`) || !strings.Contains(err.Error(), `"tc3k64"`) || !strings.Contains(err.Error(), `"gemm"`) {
		t.Errorf(`SetAttentionKernel("fa3") = %v, want an error naming it and the choices`, err)
	}
	if got := b.AttentionKernel(); got != cuda.AttentionTC1 {
		t.Errorf("after a bad name: %q, want %q kept", got, cuda.AttentionTC1)
	}
}

// TestBackendTC2Misaligned: tc2 and tc3 load four floats at once, so an
// op whose q (here a view one float into an allocation) is not 16-byte
// aligned runs tc1's kernels instead, with tc1's bits; aligned operands run
// tc2's (tc3's).
func TestBackendTC2Misaligned(t *testing.T) {
	t.Parallel()
	b, drv, _ := emulatedBackendIn(t, kernels.PrecisionBF16)
	defer b.Close()
	const N, H, KVH, D = 20, 2, 1, 16
	seqOff := []int32{0, 11, N}
	r := rand.New(rand.NewPCG(28, 31))
	buf := func(x []float32, off int) []float32 {
		y, err := kernels.AllocF32(b, off+len(x))
		if err != nil {
			t.Fatal(err)
		}
		copy(y[off:], x)
		return y[off:]
	}
	q, k, v := randn(r, N*H*D), randn(r, N*KVH*D), randn(r, N*KVH*D)
	scale := float32(0.25)
	// run returns out of a forward with q at off floats into its
	// allocation, and the kernels it launched.
	run := func(name string, off int) ([]float32, []string) {
		if err := b.SetAttentionKernel(name); err != nil {
			t.Fatal(err)
		}
		out, lse := buf(make([]float32, N*H*D), 0), buf(make([]float32, N*H), 0)
		n0 := len(drv.Launches())
		b.AttentionForward(out, lse, buf(q, off), buf(k, 0), buf(v, 0), seqOff, N, H, KVH, D, scale)
		launched := launchedKernels(drv.Launches()[n0:])
		return slices.Clone(out), launched
	}
	tc1, _ := run(cuda.AttentionTC1, 0)
	got, launched := run(cuda.AttentionTC2, 1)
	if !slices.Contains(launched, "attention_tc_forward") || slices.Contains(launched, "attention_fa2_forward") {
		t.Errorf("tc2 on a misaligned q launched %v, want attention_tc_forward", launched)
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(tc1[i]) {
			t.Fatalf("tc2 on a misaligned q: out[%d] = %g, tc1 gives %g", i, got[i], tc1[i])
		}
	}
	if _, launched := run(cuda.AttentionTC2, 4); !slices.Contains(launched, "attention_fa2_forward") {
		t.Errorf("tc2 on a q 16 bytes into its allocation launched %v, want attention_fa2_forward", launched)
	}
	got, launched = run(cuda.AttentionTC3, 1)
	if !slices.Contains(launched, "attention_tc_forward") || slices.Contains(launched, "attention_mma_forward") {
		t.Errorf("tc3 on a misaligned q launched %v, want attention_tc_forward", launched)
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(tc1[i]) {
			t.Fatalf("tc3 on a misaligned q: out[%d] = %g, tc1 gives %g", i, got[i], tc1[i])
		}
	}
	if _, launched := run(cuda.AttentionTC3, 4); !slices.Contains(launched, "attention_mma_forward") {
		t.Errorf("tc3 on a q 16 bytes into its allocation launched %v, want attention_mma_forward", launched)
	}
}

// TestBackendProfileAttentionKernel: the profile names each training
// attention op with the kernels it ran — "(tc2)" ("(tc3)") with tc2 (tc3)
// picked and aligned operands, "(gemm)" with gemm picked (aligned or not), "(tc1)" by default and for a misaligned q under tc2,
// "(f32)" in the f32 precision or for a head dim the tensor cores do not
// take — so --profile-ops shows which attention ran.
func TestBackendProfileAttentionKernel(t *testing.T) {
	t.Parallel()
	const N, H, KVH = 6, 2, 1
	seqOff := []int32{0, 4, N}
	r := rand.New(rand.NewPCG(28, 32))
	// profile runs a forward and a backward (q off floats into its
	// allocation) and returns the profile's op names with their calls.
	profile := func(b *cuda.Backend, D, off int) map[string]int {
		buf := func(x []float32, off int) []float32 {
			y, err := kernels.AllocF32(b, off+len(x))
			if err != nil {
				t.Fatal(err)
			}
			copy(y[off:], x)
			return y[off:]
		}
		zeros := func(n int) []float32 { return buf(make([]float32, n), 0) }
		q, k, v := buf(randn(r, N*H*D), off), buf(randn(r, N*KVH*D), 0), buf(randn(r, N*KVH*D), 0)
		out, lse, dout := zeros(N*H*D), zeros(N*H), buf(randn(r, N*H*D), 0)
		b.StartProfile()
		b.AttentionForward(out, lse, q, k, v, seqOff, N, H, KVH, D, 0.25)
		b.AttentionBackward(zeros(N*H*D), zeros(N*KVH*D), zeros(N*KVH*D), dout, out, lse, q, k, v, seqOff, N, H, KVH, D, 0.25)
		b.AttentionWindowForward(out, lse, q, k, v, seqOff, N, H, KVH, D, 2, 0.25)
		got := map[string]int{}
		for _, o := range b.StopProfile() {
			got[o.Op] = o.Calls
		}
		return got
	}
	want := func(path string) map[string]int {
		return map[string]int{"AttentionForward (" + path + ")": 1, "AttentionBackward (" + path + ")": 1, "AttentionWindowForward (" + path + ")": 1}
	}
	bf16, _, _ := emulatedBackendIn(t, kernels.PrecisionBF16)
	defer bf16.Close()
	f32, _, _ := emulatedBackendIn(t, kernels.PrecisionF32)
	defer f32.Close()
	for _, c := range []struct {
		name   string
		b      *cuda.Backend
		kernel string
		D, off int
		path   string
	}{
		{"bf16 default", bf16, "", 16, 0, "tc1"},
		{"bf16 tc2", bf16, cuda.AttentionTC2, 16, 0, "tc2"},
		{"bf16 tc2, q misaligned", bf16, cuda.AttentionTC2, 16, 1, "tc1"},
		{"bf16 tc2, head dim 8", bf16, cuda.AttentionTC2, 8, 0, "f32"},
		{"f32 tc2", f32, cuda.AttentionTC2, 16, 0, "f32"},
		{"bf16 tc3", bf16, cuda.AttentionTC3, 16, 0, "tc3"},
		{"bf16 tc3, q misaligned", bf16, cuda.AttentionTC3, 16, 1, "tc1"},
		{"f32 tc3", f32, cuda.AttentionTC3, 16, 0, "f32"},
		{"bf16 gemm", bf16, cuda.AttentionGEMM, 16, 0, "gemm"},
		{"bf16 gemm, q misaligned", bf16, cuda.AttentionGEMM, 16, 1, "gemm"},
		{"bf16 gemm, head dim 8", bf16, cuda.AttentionGEMM, 8, 0, "f32"},
		{"f32 gemm", f32, cuda.AttentionGEMM, 16, 0, "f32"},
	} {
		if err := c.b.SetAttentionKernel(c.kernel); err != nil {
			t.Fatal(err)
		}
		if got := profile(c.b, c.D, c.off); !maps.Equal(got, want(c.path)) {
			t.Errorf("%s: profile %v, want %v", c.name, got, want(c.path))
		}
	}
}

package cuda_test

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
)

// TestBackendProfileFlops runs one call or two of every op with products
// under a profile on the emulated device (bf16 precision) and checks each
// profile line's name (split by shape where the op is) and FLOPs against
// the products' count written out here from the shapes (2 per
// multiply-add; the attention's conventional causal count), and that an op
// without products counts none.
func TestBackendProfileFlops(t *testing.T) {
	b, _, _ := emulatedBackendIn(t, kernels.PrecisionBF16)
	defer b.Close()
	mem := emulatedMem{t: t, b: b, r: rand.New(rand.NewPCG(3, 4))}
	f32, bf16 := mem.randF32, mem.randBF16
	type want struct {
		calls int
		flops int64
	}
	wants := map[string]want{}
	add := func(name string, flops int) {
		w := wants[name]
		wants[name] = want{w.calls + 1, w.flops + int64(flops)}
	}

	b.StartProfile()
	// Matmul: c [M,N] = a [M,K] · b [K,N], split by M×N×K.
	for _, s := range [][3]int{{6, 5, 7}, {6, 5, 7}, {3, 4, 2}} {
		M, N, K := s[0], s[1], s[2]
		b.Matmul(f32(M*N), f32(M*K), f32(K*N), M, N, K, false, false, 0)
	}
	add("Matmul 6×5×7", 2*6*5*7)
	add("Matmul 6×5×7", 2*6*5*7)
	add("Matmul 3×4×2", 2*3*4*2)
	b.MatmulBatched(f32(2*3*4), f32(2*3*5), f32(2*5*4), 2, 3, 4, 5, false, false, 0)
	add("MatmulBatched 2×3×4×5", 2*2*3*4*5)
	b.MatmulBF16To(bf16(6*5), f32(6*7), nil, f32(7*5), nil, 6, 5, 7, false, false, 0)
	add("MatmulBF16To 6×5×7", 2*6*5*7)

	// The linear ops, split by their weight [OC,C].
	const N, C = 4, 6
	b.LinearForward(f32(N*5), f32(N*C), f32(5*C), f32(5), N, C, 5)
	add("LinearForward w5×6", 2*N*C*5)
	for _, oc := range []int{5, 3, 5} {
		b.LinearForwardBF16(f32(N*oc), f32(N*C), bf16(oc*C), nil, N, C, oc)
		add("LinearForwardBF16 w"+strconv.Itoa(oc)+"×6", 2*N*C*oc)
	}
	b.LinearForwardBF16Many([][]float32{f32(N * 5), f32(N * 3)}, f32(N*C), [][]uint16{bf16(5 * C), bf16(3 * C)}, nil, N, C, []int{5, 3})
	add("LinearForwardBF16Many w5+3×6", 2*N*C*5+2*N*C*3)
	b.LinearForwardBF16ManyAdd([][]float32{f32(N * 5), f32(N * 3)}, f32(N*C), [][]uint16{bf16(5 * C), bf16(3 * C)}, nil, N, C, []int{5, 3}, []bool{true, false})
	add("LinearForwardBF16ManyAdd w5+3×6", 2*N*C*5+2*N*C*3)
	b.LinearForwardBF16Rounded([][]float32{f32(N * 5), f32(N * 3)}, bf16(N*C), [][]uint16{bf16(5 * C), bf16(3 * C)}, nil, N, C, []int{5, 3}, nil)
	add("LinearForwardBF16Rounded w5+3×6", 2*N*C*5+2*N*C*3)
	b.LinearBackward(f32(N*C), f32(5*C), f32(5), f32(N*5), f32(N*C), f32(5*C), N, C, 5) // dinp and dweight
	add("LinearBackward w5×6", 2*2*N*C*5)
	b.LinearBackward(nil, f32(5*C), nil, f32(N*5), f32(N*C), nil, N, C, 5) // dweight only
	add("LinearBackward w5×6", 2*N*C*5)
	b.LinearBackwardBF16(f32(N*C), f32(N*3), bf16(3*C), N, C, 3)
	add("LinearBackwardBF16 w3×6", 2*N*C*3)
	b.LinearBackwardBF16Rounded(f32(N*C), bf16(N*3), bf16(3*C), N, C, 3)
	add("LinearBackwardBF16Rounded w3×6", 2*N*C*3)
	b.LinearBackwardBF16To(bf16(N*C), f32(N*3), bf16(3*C), N, C, 3, 0)
	add("LinearBackwardBF16To w3×6", 2*N*C*3)

	// LoRABackwardMany over q-, k- and v-like projections of rank 2: per
	// projection dB and g (2·N·R·Out each), then dA and dx (2·N·k·R·In each).
	const In, R = 6, 2
	outs := []int{5, 3, 3}
	douts, us, as, bs, das, dbs := make([][]float32, 3), make([][]float32, 3), make([][]float32, 3), make([][]float32, 3), make([][]float32, 3), make([][]float32, 3)
	for i, o := range outs {
		douts[i], us[i], as[i], bs[i], das[i], dbs[i] = f32(N*o), f32(N*R), f32(R*In), f32(o*R), f32(R*In), f32(o*R)
	}
	x := f32(N * In)
	b.LoRABackwardMany(f32(N*In), douts, us, x, as, bs, das, dbs, N, In, R, outs, 0.5, true)
	add("LoRABackwardMany w5+3+3×6 r2", 2*(2*N*R*5+2*N*R*3+2*N*R*3)+2*2*N*3*R*In)
	b.LoRABackwardMany(nil, douts, us, x, as, bs, das, dbs, N, In, R, outs, 0.5, true) // no dx
	add("LoRABackwardMany w5+3+3×6 r2", 2*(2*N*R*5+2*N*R*3+2*N*R*3)+2*N*3*R*In)

	// The logprob ops: 2·N·C·V a product on the lm_head [V,C].
	const V = 10
	targets := []int32{1, 9, -1, 4}
	lp, ent, lse := f32(N), f32(N), f32(N)
	hidden, w, wb := f32(N*C), f32(V*C), bf16(V*C)
	b.LogprobForward(lp, ent, lse, f32(N*C), hidden, w, targets, N, C, V, 0) // logits and expect
	add("LogprobForward", 2*2*N*C*V)
	b.LogprobForward(lp, ent, lse, nil, hidden, w, targets, N, C, V, 0)
	add("LogprobForward", 2*N*C*V)
	b.LogprobForwardBF16(lp, ent, lse, nil, hidden, wb, targets, N, C, V, 0)
	add("LogprobForwardBF16", 2*N*C*V)
	b.LogprobBackward(f32(N*C), f32(V*C), f32(N), f32(N), lse, ent, hidden, w, targets, N, C, V, 0) // logits, dhidden, dweight
	add("LogprobBackward", 3*2*N*C*V)
	b.LogprobBackwardBF16(f32(N*C), f32(N), f32(N), lse, ent, hidden, wb, targets, N, C, V, 0)
	add("LogprobBackwardBF16", 2*2*N*C*V)
	b.LogprobBackwardExpect(f32(N*C), f32(N), f32(N*C), w, targets, N, C, V)
	add("LogprobBackwardExpect", 0)

	// The training attention: sequences of 3 and 5 tokens, 2 query heads
	// of dim 4; forward 4·T²·D·H halved for the causal mask, the backward
	// 2.5× that; a window of 2 counts the band, T² − (T−2)².
	const T1, T2, H, KVH, D = 3, 5, 2, 1, 4
	seqOff := []int32{0, T1, T1 + T2}
	const NT = T1 + T2
	q, k, v, out, alse, dout := f32(NT*H*D), f32(NT*KVH*D), f32(NT*KVH*D), f32(NT*H*D), f32(NT*H), f32(NT*H*D)
	b.AttentionForward(out, alse, q, k, v, seqOff, NT, H, KVH, D, 0.5)
	add("AttentionForward", 4*(T1*T1+T2*T2)*D*H/2)
	b.AttentionBackward(f32(NT*H*D), f32(NT*KVH*D), f32(NT*KVH*D), dout, out, alse, q, k, v, seqOff, NT, H, KVH, D, 0.5)
	add("AttentionBackward", 5*4*(T1*T1+T2*T2)*D*H/2/2)
	b.AttentionWindowForward(out, alse, q, k, v, seqOff, NT, H, KVH, D, 2, 0.5)
	add("AttentionWindowForward", 4*((T1*T1-1*1)+(T2*T2-3*3))*D*H/2)
	b.AttentionWindowBackward(f32(NT*H*D), f32(NT*KVH*D), f32(NT*KVH*D), dout, out, alse, q, k, v, seqOff, NT, H, KVH, D, 2, 0.5)
	add("AttentionWindowBackward", 5*4*((T1*T1-1*1)+(T2*T2-3*3))*D*H/2/2)

	b.Scale(x, x, 2, len(x)) // no products
	add("Scale", 0)
	got := b.StopProfile()

	byName := map[string]cuda.OpTime{}
	for _, o := range got {
		name := o.Op
		// The attention keeps its kernels' name, not a shape: "AttentionForward (f32)".
		if i := strings.Index(name, " ("); i > 0 && strings.HasPrefix(name, "Attention") {
			name = name[:i]
		}
		if _, dup := byName[name]; dup {
			t.Errorf("two profile lines named %q: %v", name, got)
		}
		byName[name] = o
	}
	for name, w := range wants {
		o, ok := byName[name]
		switch {
		case !ok:
			t.Errorf("no profile line %q in %v", name, got)
		case o.Calls != w.calls || o.Flops != w.flops:
			t.Errorf("%s: %d calls, %d FLOPs; want %d, %d", o.Op, o.Calls, o.Flops, w.calls, w.flops)
		}
	}
	if len(byName) != len(wants) {
		t.Errorf("%d profile lines, want %d: %v", len(byName), len(wants), got)
	}
	for _, a := range []string{"AttentionForward", "AttentionBackward", "AttentionWindowForward", "AttentionWindowBackward"} {
		if o := byName[a]; !strings.HasPrefix(o.Op, a+" (") || !strings.HasSuffix(o.Op, ")") {
			t.Errorf("attention op named %q, want %q and its kernels in parentheses", o.Op, a)
		}
	}
}

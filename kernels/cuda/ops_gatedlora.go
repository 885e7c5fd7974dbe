package cuda

import (
	"fmt"

	"github.com/hone-rl/hone/kernels"
)

// GatedLoRAMaxRank is the largest LoRA rank Backend fuses into the gated
// unit (kernels.GatedLoRAForwarder's FusesGatedLoRA): gated_lora.cu takes
// 16 ranks a pass over gate and up, so rank 32 reads them twice, still
// less than the unfused gated unit and product move (1.5 reads of the
// [N, I] pair and act's float32 write), and more passes would read more.
const GatedLoRAMaxRank = 32

// gatedLoRARows and gatedLoRAThreads are gated_lora.cu's GL_ROWS and
// GL_THREADS: a block's rows and threads.
const gatedLoRARows, gatedLoRAThreads = 32, 256

// planGatedLoRAForward is GatedLoRAForward's launch: one block of
// gatedLoRAThreads a gatedLoRARows rows.
func planGatedLoRAForward(actBF, u, gate, up, a any, N, I, R int, scale float32, gelu bool) []step {
	if N == 0 {
		return nil
	}
	kernel := "gated_lora_forward_swiglu"
	if gelu {
		kernel = "gated_lora_forward_geglu"
	}
	return []step{{kernel, Dim3{(N + gatedLoRARows - 1) / gatedLoRARows, 1, 1}, Dim3{gatedLoRAThreads, 1, 1},
		[]any{actBF, u, gate, up, a, N, I, R, scale}, nil}}
}

// GatedLoRAForward is kernels.GatedLoRAForwarder's
// GatedLoRAForwardRounded on device buffers (gated_lora.cu): actBF [N, I]
// (bfloat16 pairs, bf16Len(N·I) elements) = the gated unit's output
// rounded to bfloat16, the bits of SwiGLUForwardBF16 (GeGLUForwardBF16
// when gelu), and u [N, R] = scale·(act·aᵀ) in exact float32, act never
// stored (with I 0, u is zeros).
func (o *Ops) GatedLoRAForward(actBF, u, gate, up, a *Buffer, N, I, R int, scale float32, gelu bool) error {
	const op = "GatedLoRAForward"
	c := check{op: op}
	c.sizes("N, I, R", N, I, R)
	if R < 1 {
		c.fail("rank %d (want at least 1)", R)
	}
	c.buf(o.d, "actBF", actBF, bf16Len(N*I))
	c.buf(o.d, "u", u, N*R)
	c.buf(o.d, "gate", gate, N*I)
	c.buf(o.d, "up", up, N*I)
	c.buf(o.d, "A", a, R*I)
	if c.err != nil {
		return c.err
	}
	return o.run(op, planGatedLoRAForward(actBF, u, gate, up, a, N, I, R, scale, gelu))
}

var _ kernels.GatedLoRAForwarder = (*Backend)(nil)

// FusesGatedLoRA implements kernels.GatedLoRAForwarder: in the bf16
// precision (where the down projection's product takes act's rounding,
// kernels.InputRounder) for ranks 1 to GatedLoRAMaxRank.
func (b *Backend) FusesGatedLoRA(R int) bool {
	return b.RoundsLinearInput() && R >= 1 && R <= GatedLoRAMaxRank
}

// GatedLoRAForwardRounded implements kernels.GatedLoRAForwarder
// (Ops.GatedLoRAForward) after kernels.NeedGatedLoRAForward's checks. u's
// sums run in gated_lora.cu's order (its header), not cuBLAS's, so its
// last bits may differ from LinearForward then Scale; act_bf's are
// SwiGLUForwardRounded's.
func (b *Backend) GatedLoRAForwardRounded(actBF []uint16, u []float32, gate, up, a []float32, N, I, R int, scale float32, gelu bool) {
	const op = "GatedLoRAForwardRounded"
	kernels.NeedGatedLoRAForward(op, actBF, u, gate, up, a, N, I, R)
	if !b.FusesGatedLoRA(R) {
		panic(fmt.Sprintf("cuda.%s: rank %d in precision %s (FusesGatedLoRA is false)", op, R, b.Precision()))
	}
	if N == 0 {
		return
	}
	b.onDeviceCost(op, func() opCost { return opCost{2 * int64(N) * int64(I) * int64(R), dims("", N, I) + dims(" r", R)} }, func() error {
		return b.ops.GatedLoRAForward(b.bf16(op, "actBF", actBF), b.f32(op, "u", u), b.f32(op, "gate", gate), b.f32(op, "up", up), b.f32(op, "A", a),
			N, I, R, scale, gelu)
	})
}

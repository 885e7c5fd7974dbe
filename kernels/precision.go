package kernels

import "fmt"

// Precision is the arithmetic a backend's matrix products on the frozen base
// weights use: the precision modes, named once for every backend (the CPU
// one here, the CUDA one later).
//
//   - PrecisionF32: exact float32, today's contract — every op within F32Tol of ref.
//   - PrecisionBF16: the GEMMs on frozen bfloat16 base weights (LinearForwardBF16,
//     LinearBackwardBF16) round their float32 activation operand to bfloat16
//     (nearest even) and multiply bfloat16 by bfloat16 with float32
//     accumulation — AVX512-BF16's vdpbf16ps on the CPU, bf16 tensor cores
//     on a GPU; the trade PyTorch's bf16 autocast makes. Everything else
//     (LoRA A/B and their gradients, attention, norms, softmax, the loss,
//     AdamW, the lm_head) stays float32, except that a backend may run the
//     training attention's products on bf16 tensor cores as flash attention
//     does (q, k, v, dout and the probabilities rounded to bfloat16, float32
//     accumulation, softmax and lse float32): CUDA's does for head dims a
//     multiple of 16 up to 128 (kernels/cuda/attention_tc.cu), and its
//     float32 products (Matmul: the LoRA products) on TF32 tensor cores
//     (operands rounded to 10 mantissa bits, float32 accumulation): CUDA's
//     does for an inner dimension of at least cuda.TF32MinK (the LoRA
//     gradients'); TF32's rounding error, 2⁻¹¹ relative, is an eighth of
//     bfloat16's, so the mode's tolerance class covers it.
//
// Each mode has a tolerance class for the conformance suite (Tolerance).
type Precision uint8

const (
	PrecisionF32  Precision = iota // exact float32 (the default)
	PrecisionBF16                  // bfloat16 operands, float32 accumulation
)

// String returns "f32" or "bf16", the spelling ParsePrecision and the
// --compute flags take.
func (p Precision) String() string {
	switch p {
	case PrecisionF32:
		return "f32"
	case PrecisionBF16:
		return "bf16"
	}
	return fmt.Sprintf("Precision(%d)", uint8(p))
}

// ParsePrecision reads a --compute value: "f32" (or "float32") or "bf16"
// (or "bfloat16").
func ParsePrecision(s string) (Precision, error) {
	switch s {
	case "f32", "float32":
		return PrecisionF32, nil
	case "bf16", "bfloat16":
		return PrecisionBF16, nil
	}
	return PrecisionF32, fmt.Errorf("unknown compute precision %q (want f32 or bf16)", s)
}

// Tolerance returns the mode's conformance bounds, relative as the suite
// measures them (|got − want| ≤ tol·(|want| + rms(want))):
//
//   - same: against ref computed on the same rounded inputs (the activation
//     rounded to bfloat16 as the mode does it): only the order of the
//     float32 accumulation differs, so it is F32's bound;
//   - vsF32: against ref's float32 op on the unrounded activation — the
//     mode's own error. Each bfloat16 operand carries a relative rounding
//     error of at most 2⁻⁸ (8 significant bits, round to nearest); a dot
//     product of random terms stays within a few of those relative to its
//     buffer's size.
//
// For PrecisionF32 both are the float32 bound.
func (p Precision) Tolerance() (same, vsF32 float64) {
	if p == PrecisionBF16 {
		return F32Tol, BF16ComputeTol
	}
	return F32Tol, F32Tol
}

// The tolerance classes (relative, see Tolerance): F32Tol for float32
// arithmetic, BF16ComputeTol for a product whose operands were rounded to
// bfloat16.
const (
	F32Tol         = 2e-5
	BF16ComputeTol = 2e-2
)

// PrecisionOf returns the precision backend b computes in: what its
// Precision method says, or PrecisionF32 for a backend without one (ref is always
// exact).
func PrecisionOf(b Backend) Precision {
	if p, ok := b.(interface{ Precision() Precision }); ok {
		return p.Precision()
	}
	return PrecisionF32
}

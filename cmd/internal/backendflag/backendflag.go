// Package backendflag reads the --compute flag of hone-train and hone-serve
// (the main packages build the CPU backend from it).
package backendflag

import (
	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/train/model"
)

// ComputeUsage is the help of the --compute flag.
const ComputeUsage = "precision of the products on the frozen base weights: f32 (exact), or bf16 (bfloat16 operands, float32 accumulation, on CPUs with AVX512-BF16 — exit 2 without; needs --dtype bfloat16; LoRA, attention, norms, the loss and the optimizer stay float32)"

// Precision returns the precision the --compute value names, given the
// --dtype value: a usage error (exit 2) for an unknown precision, and for
// bf16 over float32 weights (there is no bfloat16 weight to multiply).
func Precision(compute, dtype string) (kernels.Precision, error) {
	p, err := kernels.ParsePrecision(compute)
	if err != nil {
		return p, cli.Usagef("--compute: %v", err)
	}
	if p == kernels.PrecisionBF16 {
		dt, err := model.ParseWeightDType(dtype)
		if err != nil {
			return p, cli.Usagef("--dtype: %v", err)
		}
		if dt != model.DTypeBFloat16 {
			return p, cli.Usagef("--compute bf16 needs --dtype bfloat16 (the base weights as bfloat16); got --dtype %s", dtype)
		}
	}
	return p, nil
}

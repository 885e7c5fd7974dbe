// Package backendflag reads the --compute and --bf16-kernel flags of
// hone-train and hone-serve (the main packages build the CPU backend from
// them).
package backendflag

import (
	"fmt"

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

// BF16KernelUsage is the help of the --bf16-kernel flag.
const BF16KernelUsage = "micro-kernel of --compute bf16: native (the best this CPU has: AMX tiles on Intel Sapphire Rapids and later, else AVX512-BF16), amx or avx512bf16 (that one, exit 2 without it), or portable (the same rounding, packing and float32 accumulation in plain C, on any CPU, several times SLOWER than --compute f32: only for checking the bf16 mode's accuracy on a CPU without AVX512-BF16)"

// BF16Kernel returns the cpu.Options.BF16Kernel value the --bf16-kernel
// value names ("" for native, "amx", "avx512bf16", "portable"), given the
// precision of --compute: a usage error for an unknown kernel, and for a
// named one without --compute bf16 (it would do nothing).
func BF16Kernel(p kernels.Precision, kernel string) (string, error) {
	switch kernel {
	case "native":
		return "", nil
	case "amx", "avx512bf16", "portable":
		if p != kernels.PrecisionBF16 {
			return "", cli.Usagef("--bf16-kernel %s needs --compute bf16 (got --compute %v)", kernel, p)
		}
		return kernel, nil
	}
	return "", cli.Usagef("--bf16-kernel: %v", fmt.Errorf("unknown kernel %q: want native, amx, avx512bf16 or portable", kernel))
}

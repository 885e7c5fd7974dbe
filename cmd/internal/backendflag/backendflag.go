// Package backendflag reads the --compute, --bf16-kernel, --cuda-attention,
// --cuda-sync and --cuda-gemm flags of hone-train and hone-serve (the main packages
// build the CPU backend from them, cmd/internal/backend the CUDA one).
package backendflag

import (
	"fmt"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/train/model"
	"github.com/spf13/pflag"
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

// CUDAAttentionUsage is the help of the --cuda-attention flag.
const CUDAAttentionUsage = "training attention of --device cuda --compute bf16 (bf16 tensor cores): tc1 (attention_tc.cu, the default), tc2 (laid out as FlashAttention-2), tc3 (FlashAttention-2 on mma.sync register fragments), tc3k64 (tc3 with 64-row tiles in dynamic shared memory) or gemm (batched cuBLAS GEMMs around a masked softmax); tc2, tc3, tc3k64 and gemm have run only on the emulated device, not yet timed on a GPU; another value than tc1 without --device cuda --compute bf16 is exit 2 (it would do nothing)"

// CUDASyncUsage is the help of the --cuda-sync flag.
const CUDASyncUsage = "when --device cuda waits for the GPU: op (every op ends synchronized, the default) or edges (stream-ordered: ops only queue their work, the backend waits where the host reads results or memory is reused; fewer waits, a device failure reported at the next wait; run only on the emulated device, not yet on a GPU); edges without --device cuda is exit 2"

// CUDAGEMMUsage is the help of the --cuda-gemm flag.
const CUDAGEMMUsage = "library of the linear-layer GEMMs of --device cuda --compute bf16: cublas (cublasGemmEx, the default) or cublaslt (cublasLtMatmul; loads cuBLASLt by its sonames or from $HONE_LIBCUBLASLT, exit 1 naming it when absent; the same bits on the emulated device, not yet timed on a GPU); cublaslt without --device cuda --compute bf16 is exit 2 (it would do nothing)"

// CUDA is the CUDA backend's tuning that --cuda-attention, --cuda-sync and
// --cuda-gemm name; its zero value is the defaults (tc1, every op
// synchronized, cuBLAS).
type CUDA struct {
	Attention     string // "tc1", "tc2", "tc3", "tc3k64" or "gemm" (cuda.Backend.SetAttentionKernel)
	StreamOrdered bool   // --cuda-sync edges: cuda.Backend.SetSyncEachOp(false)
	BLASLt        bool   // --cuda-gemm cublaslt: cuda.Backend.SetGEMMLibrary(cuda.GEMMCublasLt)
}

// CUDAFlags returns the tuning --cuda-attention, --cuda-sync and
// --cuda-gemm name, given --device and the precision of --compute: a usage
// error (exit 2) for an unknown value, for an attention other than tc1 or
// for cublaslt unless --device cuda --compute bf16 (the f32 precision and
// the CPU have one attention, and keep cuBLAS), and for edges unless
// --device cuda.
func CUDAFlags(device string, p kernels.Precision, attention, sync, gemm string) (CUDA, error) {
	var c CUDA
	switch attention {
	case "tc1":
	case "tc2", "tc3", "tc3k64", "gemm":
		if device != "cuda" || p != kernels.PrecisionBF16 {
			return c, cli.Usagef("--cuda-attention %s needs --device cuda --compute bf16 (got --device %s --compute %v): the other modes have one attention", attention, device, p)
		}
	default:
		return c, cli.Usagef("--cuda-attention: unknown attention %q: want tc1, tc2, tc3, tc3k64 or gemm", attention)
	}
	c.Attention = attention
	switch sync {
	case "op":
	case "edges":
		if device != "cuda" {
			return c, cli.Usagef("--cuda-sync edges needs --device cuda (got --device %s)", device)
		}
		c.StreamOrdered = true
	default:
		return c, cli.Usagef("--cuda-sync: unknown mode %q: want op or edges", sync)
	}
	switch gemm {
	case "cublas":
	case "cublaslt":
		if device != "cuda" || p != kernels.PrecisionBF16 {
			return c, cli.Usagef("--cuda-gemm cublaslt needs --device cuda --compute bf16 (got --device %s --compute %v): the other modes keep cuBLAS", device, p)
		}
		c.BLASLt = true
	default:
		return c, cli.Usagef("--cuda-gemm: unknown library %q: want cublas or cublaslt", gemm)
	}
	return c, nil
}

// CUDAValues holds the values of the flags AddCUDAFlags registers.
type CUDAValues struct {
	Attention, Sync, GEMM string
}

// AddCUDAFlags registers --cuda-attention, --cuda-sync and --cuda-gemm on
// fs, into v.
func AddCUDAFlags(fs *pflag.FlagSet, v *CUDAValues) {
	fs.StringVar(&v.Attention, "cuda-attention", "tc1", CUDAAttentionUsage)
	fs.StringVar(&v.Sync, "cuda-sync", "op", CUDASyncUsage)
	fs.StringVar(&v.GEMM, "cuda-gemm", "cublas", CUDAGEMMUsage)
}

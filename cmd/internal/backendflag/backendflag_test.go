package backendflag

import (
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/kernels"
)

func TestPrecision(t *testing.T) {
	for _, c := range []struct{ compute, dtype, want string }{
		{"fp8", "float32", "unknown compute precision"},
		{"bf16", "float32", "needs --dtype bfloat16"},
		{"bf16", "int4", "--dtype"},
	} {
		_, err := Precision(c.compute, c.dtype)
		if cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--compute %s --dtype %s: %v (exit %d), want a usage error saying %q", c.compute, c.dtype, err, cli.ExitCode(err), c.want)
		}
	}
	for _, c := range []struct {
		compute, dtype string
		want           kernels.Precision
	}{{"f32", "float32", kernels.PrecisionF32}, {"f32", "bf16", kernels.PrecisionF32}, {"bf16", "bf16", kernels.PrecisionBF16}, {"bfloat16", "bfloat16", kernels.PrecisionBF16}} {
		if p, err := Precision(c.compute, c.dtype); err != nil || p != c.want {
			t.Errorf("--compute %s --dtype %s: %v, %v; want %v", c.compute, c.dtype, p, err, c.want)
		}
	}
}

func TestBF16Kernel(t *testing.T) {
	for _, c := range []struct {
		p            kernels.Precision
		kernel, want string
	}{
		{kernels.PrecisionBF16, "avx2", "unknown kernel"},
		{kernels.PrecisionBF16, "", "unknown kernel"},
		{kernels.PrecisionF32, "portable", "needs --compute bf16"},
		{kernels.PrecisionF32, "amx", "needs --compute bf16"},
		{kernels.PrecisionF32, "avx512bf16", "needs --compute bf16"},
	} {
		_, err := BF16Kernel(c.p, c.kernel)
		if cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--compute %v --bf16-kernel %q: %v (exit %d), want a usage error saying %q", c.p, c.kernel, err, cli.ExitCode(err), c.want)
		}
	}
	for _, c := range []struct {
		p            kernels.Precision
		kernel, want string
	}{{kernels.PrecisionF32, "native", ""}, {kernels.PrecisionBF16, "native", ""}, {kernels.PrecisionBF16, "portable", "portable"},
		{kernels.PrecisionBF16, "amx", "amx"}, {kernels.PrecisionBF16, "avx512bf16", "avx512bf16"}} {
		if k, err := BF16Kernel(c.p, c.kernel); err != nil || k != c.want {
			t.Errorf("--compute %v --bf16-kernel %s: %q, %v; want %q", c.p, c.kernel, k, err, c.want)
		}
	}
}

func TestCUDAFlags(t *testing.T) {
	for _, c := range []struct {
		device                string
		p                     kernels.Precision
		attention, sync, gemm string
		want                  string
	}{
		{"cuda", kernels.PrecisionBF16, "flash", "op", "cublas", "unknown attention"},
		{"cuda", kernels.PrecisionBF16, "", "op", "cublas", "unknown attention"},
		{"cuda", kernels.PrecisionF32, "tc2", "op", "cublas", "needs --device cuda --compute bf16"},
		{"cuda", kernels.PrecisionF32, "gemm", "op", "cublas", "needs --device cuda --compute bf16"},
		{"cpu", kernels.PrecisionBF16, "tc3", "op", "cublas", "needs --device cuda --compute bf16"},
		{"cpu", kernels.PrecisionBF16, "tc3k64", "op", "cublas", "needs --device cuda --compute bf16"},
		{"cpu", kernels.PrecisionBF16, "gemm", "op", "cublas", "needs --device cuda --compute bf16"},
		{"cuda", kernels.PrecisionF32, "tc1", "never", "cublas", "unknown mode"},
		{"cpu", kernels.PrecisionF32, "tc1", "edges", "cublas", "--cuda-sync edges needs --device cuda"},
		{"cuda", kernels.PrecisionBF16, "tc1", "op", "cutlass", "unknown library"},
		{"cuda", kernels.PrecisionBF16, "tc1", "op", "", "unknown library"},
		{"cpu", kernels.PrecisionBF16, "tc1", "op", "cublaslt", "--cuda-gemm cublaslt needs --device cuda --compute bf16"},
		{"cuda", kernels.PrecisionF32, "tc1", "op", "cublaslt", "--cuda-gemm cublaslt needs --device cuda --compute bf16"},
	} {
		_, err := CUDAFlags(c.device, c.p, c.attention, c.sync, c.gemm)
		if cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--device %s --compute %v --cuda-attention %q --cuda-sync %q --cuda-gemm %q: %v (exit %d), want a usage error saying %q",
				c.device, c.p, c.attention, c.sync, c.gemm, err, cli.ExitCode(err), c.want)
		}
	}
	for _, c := range []struct {
		device                string
		p                     kernels.Precision
		attention, sync, gemm string
		want                  CUDA
	}{
		{"cpu", kernels.PrecisionF32, "tc1", "op", "cublas", CUDA{Attention: "tc1"}},
		{"cpu", kernels.PrecisionBF16, "tc1", "op", "cublas", CUDA{Attention: "tc1"}},
		{"cuda", kernels.PrecisionF32, "tc1", "edges", "cublas", CUDA{Attention: "tc1", StreamOrdered: true}},
		{"cuda", kernels.PrecisionBF16, "tc2", "op", "cublas", CUDA{Attention: "tc2"}},
		{"cuda", kernels.PrecisionBF16, "tc3", "op", "cublas", CUDA{Attention: "tc3"}},
		{"cuda", kernels.PrecisionBF16, "tc3k64", "op", "cublas", CUDA{Attention: "tc3k64"}},
		{"cuda", kernels.PrecisionBF16, "gemm", "edges", "cublas", CUDA{Attention: "gemm", StreamOrdered: true}},
		{"cuda", kernels.PrecisionBF16, "tc1", "op", "cublaslt", CUDA{Attention: "tc1", BLASLt: true}},
	} {
		if got, err := CUDAFlags(c.device, c.p, c.attention, c.sync, c.gemm); err != nil || got != c.want {
			t.Errorf("--device %s --compute %v --cuda-attention %s --cuda-sync %s --cuda-gemm %s: %+v, %v; want %+v", c.device, c.p, c.attention, c.sync, c.gemm, got, err, c.want)
		}
	}
}

// Package backend builds the compute backend a command's --device flag asks
// for, so that hone-train and hone-serve choose it the same way.
package backend

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/hone-rl/hone/cmd/internal/backendflag"
	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/spf13/pflag"
)

// The environment variables that give the CUDA libraries' paths explicitly,
// for machines where they are not on the loader's path (pip's
// nvidia-cublas, for one).
const (
	LibCUDAEnv     = "HONE_LIBCUDA"
	LibCUBLASEnv   = "HONE_LIBCUBLAS"
	LibCUBLASLtEnv = "HONE_LIBCUBLASLT" // read only for --cuda-gemm cublaslt
)

// LtAutotuneEnv sets, for --cuda-gemm cublaslt, how many of cuBLASLt's
// candidate algorithms are timed per new GEMM shape (cuda.Device.SetLtAutotune):
// unset, "off", 0 or 1 for none (the heuristic's first algorithm), "on"
// for cuda.LtAutotuneCandidates, or a count. Off is the commands' default
// although cuda.Ops times them by default: hone-train promises a
// bit-identical resume on the same device, and the timing may choose a
// different algorithm, with different last bits, in the resumed process.
const LtAutotuneEnv = "HONE_CUDA_LT_AUTOTUNE"

// ltAutotune parses LtAutotuneEnv's value v: the candidates to time, 1 for
// none.
func ltAutotune(v string) (int, error) {
	switch v {
	case "", "off":
		return 1, nil
	case "on":
		return cuda.LtAutotuneCandidates, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q: want on, off or a count of candidates (0 or 1: off)", LtAutotuneEnv, v)
	}
	return max(1, n), nil
}

// AddFlag registers --device on fs, into device.
func AddFlag(fs *pflag.FlagSet, device *string) {
	fs.StringVar(device, "device", "cpu", "where the model runs: cpu, or cuda (the NVIDIA driver and cuBLAS, loaded at run time, on device 0, --compute f32 or bf16; never run on a real GPU yet; "+
		LibCUDAEnv+", "+LibCUBLASEnv+" and "+LibCUBLASLtEnv+" give the libraries' paths)")
}

// Open builds the backend the commands' flags name: --device (cpu or
// cuda), --threads, --compute, --bf16-kernel and --dtype, and cf, the
// --cuda-* flags (backendflag.CUDAFlags: usage errors where they would do
// nothing). On the CPU it is newCPU's; on cuda, kernels/cuda's Backend
// computing in the precision of --compute (bf16 needs --dtype bfloat16
// there too, but no AVX512), where --bf16-kernel, a CPU micro-kernel, is a
// usage error unless left at its default. getenv gives the CUDA
// libraries' paths (LibCUDAEnv, …).
func Open(device string, threads int, compute, kernel, dtype string, cf backendflag.CUDAValues, getenv func(string) string) (kernels.Backend, error) {
	p, err := backendflag.Precision(compute, dtype)
	if err != nil {
		return nil, err
	}
	tune, err := backendflag.CUDAFlags(device, p, cf.Attention, cf.Sync, cf.GEMM)
	if err != nil {
		return nil, err
	}
	switch device {
	case "cpu":
		return newCPU(threads, p, kernel)
	case "cuda":
		if kernel != "native" {
			return nil, cli.Usagef("--bf16-kernel %s: the flag picks a CPU micro-kernel; --device cuda takes none", kernel)
		}
		return openCUDA(p, tune, getenv)
	default:
		return nil, cli.Usagef("--device %q: want cpu or cuda", device)
	}
}

// newCPU builds kernels/cpu's backend on threads workers (≤ 0: GOMAXPROCS;
// one spare P, see cpu.SpareProc) in precision p with the micro-kernel
// --bf16-kernel names. The bf16 mode on a CPU or build without AVX512-BF16
// is a usage error (exit 2): it never falls back to float32 silently, nor
// to the portable kernel unless --bf16-kernel portable asks for it. (This
// package is the commands' one builder of it: libraries take a
// kernels.Backend, see the contract tests.)
func newCPU(threads int, p kernels.Precision, kernel string) (kernels.Backend, error) {
	k, err := backendflag.BF16Kernel(p, kernel)
	if err != nil {
		return nil, err
	}
	be, err := cpu.New(cpu.Options{Workers: cpu.SpareProc(threads), Compute: p, BF16Kernel: k})
	if errors.As(err, new(cpu.NoBF16Error)) {
		return nil, cli.Usage(err)
	}
	if err != nil {
		return nil, fmt.Errorf("cpu backend: %w", err)
	}
	return be, nil
}

// openCUDA returns kernels/cuda's Backend computing in precision p on
// device 0, with the library paths from getenv, tuned as tune says (its
// attention, synchronization and GEMM library): a machine lacking the
// driver, cuBLAS or a device gets the error naming what is missing (exit
// 1), and so does one lacking cuBLASLt when tune.BLASLt asks for it
// (--cuda-gemm cublaslt).
func openCUDA(p kernels.Precision, tune backendflag.CUDA, getenv func(string) string) (kernels.Backend, error) {
	o := cuda.Options{DriverLib: getenv(LibCUDAEnv), BLASLib: getenv(LibCUBLASEnv)}
	if tune.BLASLt {
		o.BLASLt, o.BLASLtLib = true, getenv(LibCUBLASLtEnv)
	}
	be, err := cuda.OpenBackend(o, p)
	if err != nil {
		return nil, err
	}
	if tune.BLASLt {
		if err := be.SetGEMMLibrary(cuda.GEMMCublasLt); err != nil {
			be.Close()
			return nil, fmt.Errorf("--cuda-gemm cublaslt: %w; set %s to the path of libcublasLt.so, or leave --cuda-gemm at cublas", err, LibCUBLASLtEnv)
		}
		n, err := ltAutotune(getenv(LtAutotuneEnv))
		if err != nil {
			be.Close()
			return nil, cli.Usage(err)
		}
		be.SetGEMMAutotune(n)
	}
	if err := be.SetAttentionKernel(tune.Attention); err != nil {
		be.Close()
		return nil, cli.Usage(err)
	}
	be.SetSyncEachOp(!tune.StreamOrdered)
	return be, nil
}

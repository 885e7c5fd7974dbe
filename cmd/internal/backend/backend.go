// Package backend builds the compute backend a command's --device flag asks
// for, so that hone-train and hone-serve choose it the same way.
package backend

import (
	"fmt"
	"strconv"

	"github.com/hone-rl/hone/cmd/internal/backendflag"
	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/kernels"
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

// New returns the backend for device. "cpu" is what newCPU returns (the
// main builds kernels/cpu: only package main may, see the contract tests).
// "cuda" is kernels/cuda's Backend computing in precision p on device 0,
// with the library paths from getenv, tuned as tune says (its attention
// and synchronization; backendflag.CUDAFlags leaves them at their defaults
// for the CPU): a machine lacking the driver, cuBLAS or a device gets the
// error naming what is missing (exit 1), and so does one lacking cuBLASLt
// when tune.BLASLt asks for it (--cuda-gemm cublaslt).
func New(device string, p kernels.Precision, tune backendflag.CUDA, newCPU func() (kernels.Backend, error), getenv func(string) string) (kernels.Backend, error) {
	switch device {
	case "cpu":
		return newCPU()
	case "cuda":
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
	default:
		return nil, cli.Usagef("--device %q: want cpu or cuda", device)
	}
}

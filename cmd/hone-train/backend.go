package main

import (
	"errors"
	"fmt"

	"github.com/hone-rl/hone/cmd/internal/backend"
	"github.com/hone-rl/hone/cmd/internal/backendflag"
	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cpu"
)

// newBackend builds the CPU backend from --threads (≤ 0: GOMAXPROCS; one
// spare P, see cpu.SpareProc), --compute, --bf16-kernel and --dtype. The
// bf16 mode on a CPU or build without AVX512-BF16 is a usage error (exit
// 2): it never falls back to float32 silently, nor to the portable kernel
// unless --bf16-kernel portable asks for it.
func newBackend(threads int, compute, kernel, dtype string) (*cpu.Backend, error) {
	p, err := backendflag.Precision(compute, dtype)
	if err != nil {
		return nil, err
	}
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

// openBackend builds the backend --device names: the CPU backend of
// newBackend, or the CUDA backend computing in the precision of --compute
// (bf16 needs --dtype bfloat16 there too, but no AVX512). --bf16-kernel
// picks a CPU micro-kernel: any value but the default is a usage error
// with --device cuda. cf holds --cuda-attention, --cuda-sync and
// --cuda-gemm (backendflag.CUDAFlags: usage errors where they would do
// nothing).
func openBackend(device string, threads int, compute, kernel, dtype string, cf backendflag.CUDAValues, getenv func(string) string) (kernels.Backend, error) {
	p, err := backendflag.Precision(compute, dtype)
	if err != nil {
		return nil, err
	}
	tune, err := backendflag.CUDAFlags(device, p, cf.Attention, cf.Sync, cf.GEMM)
	if err != nil {
		return nil, err
	}
	if device == "cuda" && kernel != "native" {
		return nil, cli.Usagef("--bf16-kernel %s: the flag picks a CPU micro-kernel; --device cuda takes none", kernel)
	}
	return backend.New(device, p, tune, func() (kernels.Backend, error) {
		be, err := newBackend(threads, compute, kernel, dtype)
		if err != nil {
			return nil, err
		}
		return be, nil
	}, getenv)
}

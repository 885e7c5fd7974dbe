// Package backend builds the compute backend a command's --device flag asks
// for, so that hone-train and hone-serve choose it the same way.
package backend

import (
	"errors"
	"fmt"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/spf13/pflag"
)

// The environment variables that give the CUDA libraries' paths explicitly,
// for machines where they are not on the loader's path (pip's
// nvidia-cublas, for one).
const (
	LibCUDAEnv   = "HONE_LIBCUDA"
	LibCUBLASEnv = "HONE_LIBCUBLAS"
)

// AddFlag registers --device on fs, into device.
func AddFlag(fs *pflag.FlagSet, device *string) {
	fs.StringVar(device, "device", "cpu", "where the model runs: cpu, or cuda (not implemented yet: it only checks for the NVIDIA driver, cuBLAS and a device; "+
		LibCUDAEnv+" and "+LibCUBLASEnv+" give the libraries' paths)")
}

// New returns the backend for device. "cpu" is what newCPU returns (the
// main builds kernels/cpu: only package main may, see the contract tests).
// "cuda" opens the device through kernels/cuda, with the library paths from
// getenv: a machine lacking the driver, cuBLAS or a device gets the error
// naming what is missing, and one that has them all an error saying the
// CUDA backend cannot run the model yet; both exit 1.
func New(device string, newCPU func() (kernels.Backend, error), getenv func(string) string) (kernels.Backend, error) {
	switch device {
	case "cpu":
		return newCPU()
	case "cuda":
		dev, err := cuda.Open(cuda.Options{DriverLib: getenv(LibCUDAEnv), BLASLib: getenv(LibCUBLASEnv)})
		if err != nil {
			return nil, err
		}
		return nil, errors.Join(fmt.Errorf("CUDA backend: not implemented yet: %s is there, but kernels/cuda has device buffers and GEMMs only, not the model's operations (issue #28); use --device cpu", dev), dev.Close())
	default:
		return nil, cli.Usagef("--device %q: want cpu or cuda", device)
	}
}

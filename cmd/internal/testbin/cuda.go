package testbin

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/hone-rl/hone/kernels/cuda/cudafake"
)

// EmulatedCUDA builds, from the kernel sources in cudaDir, the stand-ins for
// libcuda and libcublas that compute on the CPU
// (cudafake.BuildEmulatingLibs: the real .cu kernels through the CPU shim,
// the GEMMs in C), with $CC and $CXX (default gcc and g++). Without a C or
// C++ compiler the test is skipped, unless CI is set.
func EmulatedCUDA(t *testing.T, cudaDir string) cudafake.Libs {
	t.Helper()
	cc, cxx := os.Getenv("CC"), os.Getenv("CXX")
	if cc == "" {
		cc = "gcc" // as cgo
	}
	if cxx == "" {
		cxx = "g++"
	}
	start := time.Now()
	libs, err := cudafake.BuildEmulatingLibs(context.Background(), cc, cxx, cudaDir, t.TempDir())
	if errors.Is(err, exec.ErrNotFound) && os.Getenv("CI") == "" {
		t.Skipf("no compiler to build the emulating CUDA libraries: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("emulating CUDA libraries built in %v", time.Since(start).Round(time.Millisecond))
	return libs
}

package cudafake

import (
	"context"
	"embed"
	"fmt"
	"os/exec"
	"path/filepath"

	"github.com/hone-rl/hone/kernels/cuda/internal/ccache"
)

//go:embed clib/*.c
var clib embed.FS

// Libs are the paths of the fake CUDA libraries BuildLibs compiled.
type Libs struct {
	Driver string // a stand-in for libcuda.so.1 (clib/fake_cuda.c)
	BLAS   string // a stand-in for libcublas.so (clib/fake_cublas.c)
	BLASLt string // a stand-in for libcublasLt.so (clib/fake_cublaslt.c)
}

// BuildLibs compiles the C stand-ins for the CUDA driver, cuBLAS and
// cuBLASLt (clib/*.c) with the C compiler cc into shared libraries in dir, so that
// tests drive the real run-time loader (kernels/cuda.LoadDriver, LoadBLAS, LoadBLASLt)
// and its calls through purego on a machine without CUDA. The fake driver
// reports HONE_FAKE_CUDA_DEVICES devices (default 1) from the environment of
// the process that loads it; three extra C functions serve tests in that
// process: hone_fake_cuda_set_devices(int) overrides the count,
// hone_fake_cuda_live() returns the allocations not yet freed, and
// hone_fake_cuda_set_stub(1) makes it answer as the toolkit's stub of
// libcuda does (CUDA_ERROR_STUB_LIBRARY from cuInit, no error names). An absent
// compiler gives an error wrapping exec.ErrNotFound. As BuildEmulator, it
// compiles through the compiler cache (ccache.Default).
func BuildLibs(ctx context.Context, cc, dir string) (Libs, error) {
	if _, err := exec.LookPath(cc); err != nil {
		return Libs{}, fmt.Errorf("fake CUDA libraries: %w", err)
	}
	libs := Libs{Driver: filepath.Join(dir, "libcuda.so.1"), BLAS: filepath.Join(dir, "libcublas.so.13"), BLASLt: filepath.Join(dir, "libcublasLt.so.13")}
	for _, b := range []struct{ src, out string }{{"clib/fake_cuda.c", libs.Driver}, {"clib/fake_cublas.c", libs.BLAS}, {"clib/fake_cublaslt.c", libs.BLASLt}} {
		src, err := clib.ReadFile(b.src)
		if err != nil {
			return Libs{}, err
		}
		args := []string{"-x", "c", "-std=c99", "-O1", "-Wall", "-Werror", "-shared", "-fPIC", "-"}
		if _, err := ccache.Default().Compile(ctx, cc, args, string(src), b.out); err != nil {
			return Libs{}, fmt.Errorf("fake CUDA libraries: %s: %w", b.src, err)
		}
	}
	return libs, nil
}

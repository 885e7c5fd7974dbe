package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels/cuda/cudafake"
)

// TestDeviceCUDA runs hone-serve --device cuda: where the driver library,
// cuBLAS or a device is missing it exits 1 naming which; where all are there
// but the driver refuses the kernels (the C stand-in of libcuda of
// kernels/cuda/cudafake loads its toy module only) it exits 1 naming the
// failing call, without serving. With --upstream the flag
// is a usage error.
func TestDeviceCUDA(t *testing.T) {
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc" // as cgo
	}
	libs, err := cudafake.BuildLibs(context.Background(), cc, t.TempDir())
	if errors.Is(err, exec.ErrNotFound) && os.Getenv("CI") == "" {
		t.Skipf("no C compiler to build the fake CUDA libraries: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	nowhere := filepath.Join(t.TempDir(), "libcublas.so.13")
	model := []string{"--model", "../../serve/testdata/tiny", "--port", "0", "--device", "cuda"}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		code int
		says string
	}{
		{"no driver", []string{"HONE_LIBCUDA=" + nowhere}, model, 1, "CUDA backend unavailable: no CUDA driver library (tried " + nowhere + ")"},
		{"no cuBLAS", []string{"HONE_LIBCUDA=" + libs.Driver, "HONE_LIBCUBLAS=" + nowhere}, model, 1, "CUDA backend unavailable: no cuBLAS library (tried " + nowhere + ")"},
		{"no device", []string{"HONE_LIBCUDA=" + libs.Driver, "HONE_LIBCUBLAS=" + libs.BLAS, "HONE_FAKE_CUDA_DEVICES=0"}, model, 1, "CUDA backend unavailable: no CUDA device"},
		{"device there", []string{"HONE_LIBCUDA=" + libs.Driver, "HONE_LIBCUBLAS=" + libs.BLAS}, model, 1, "cuModuleLoadData: CUDA_ERROR_INVALID_IMAGE"},
		{"sonames", nil, model, 1, "CUDA backend"}, // whatever this machine has
		{"cpu kernel", nil, append(model, "--compute", "bf16", "--dtype", "bfloat16", "--bf16-kernel", "portable"), 2, "--device cuda takes none"},
		{"upstream", nil, []string{"--upstream", "http://127.0.0.1:1", "--device", "cuda"}, 2, "--device applies to --model, not --upstream"},
		{"attention on f32", nil, append(model, "--cuda-attention", "gemm"), 2, "--cuda-attention gemm needs --device cuda --compute bf16 (got --device cuda --compute f32)"},
		{"edges on cpu", nil, append(model, "--device", "cpu", "--cuda-sync", "edges"), 2, "--cuda-sync edges needs --device cuda (got --device cpu)"},
		{"unknown sync", nil, append(model, "--cuda-sync", "never"), 2, `--cuda-sync: unknown mode "never"`},
		{"upstream sync", nil, []string{"--upstream", "http://127.0.0.1:1", "--cuda-sync", "edges"}, 2, "--cuda-sync applies to --model, not --upstream"},
		{"upstream attention", nil, []string{"--upstream", "http://127.0.0.1:1", "--cuda-attention", "tc1"}, 2, "--cuda-attention applies to --model, not --upstream"},
		{"cublaslt on f32", nil, append(model, "--cuda-gemm", "cublaslt"), 2, "--cuda-gemm cublaslt needs --device cuda --compute bf16 (got --device cuda --compute f32)"},
		{"cublaslt on cpu", nil, append(model, "--device", "cpu", "--compute", "bf16", "--dtype", "bfloat16", "--cuda-gemm", "cublaslt"), 2, "--cuda-gemm cublaslt needs --device cuda --compute bf16 (got --device cpu"},
		{"unknown gemm", nil, append(model, "--cuda-gemm", "cutlass"), 2, `--cuda-gemm: unknown library "cutlass"`},
		{"upstream gemm", nil, []string{"--upstream", "http://127.0.0.1:1", "--cuda-gemm", "cublas"}, 2, "--cuda-gemm applies to --model, not --upstream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(binary, tc.args...)
			cmd.Env = append(os.Environ(), tc.env...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != tc.code || !strings.Contains(stderr.String(), tc.says) {
				t.Errorf("%v: %v, stderr %q; want exit %d saying %q", tc.args, err, stderr.String(), tc.code, tc.says)
			}
			if strings.Contains(stderr.String(), "listening") {
				t.Errorf("served with --device cuda:\n%s", stderr.String())
			}
		})
	}
}

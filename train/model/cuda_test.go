package model

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/cudafake"
)

// The model on cuda.Backend (issue #28). Without a GPU it runs on the
// emulated device of kernels/cuda/cudafake: managed memory is host memory,
// the .cu kernels run on the CPU (one OS thread per CUDA thread), the GEMMs
// in the fake cuBLAS. With HONE_CUDA_TEST=1 it runs on device 0 through the
// real driver (`make gpu-check` builds this test binary into bin/gpu-check;
// run.sh runs it from bin/gpu-check/train/model, so goldenDir resolves to
// the golden files copied beside it).

// cudaEmulator is the CUDA emulator library, built once per test binary.
var cudaEmulator struct {
	once sync.Once
	emu  *cudafake.Emulator
	err  error
}

// emulatedCUDABackend is a cuda.Backend computing in float32 on an
// emulated device. Without a C++ compiler the test is skipped, unless CI
// is set.
func emulatedCUDABackend(t *testing.T) *cuda.Backend {
	t.Helper()
	cudaEmulator.once.Do(func() {
		cxx := os.Getenv("CXX")
		if cxx == "" {
			cxx = "g++"
		}
		dir, err := os.MkdirTemp("", "cudaemu")
		if err != nil {
			cudaEmulator.err = err
			return
		}
		lib := filepath.Join(dir, "libhone_cuda_emu.so")
		if cudaEmulator.err = cudafake.BuildEmulator(context.Background(), cxx, "../../kernels/cuda", lib); cudaEmulator.err == nil {
			cudaEmulator.emu, cudaEmulator.err = cudafake.LoadEmulator(lib)
		}
	})
	// g++ reads the sources, not this process: read them here too, so that
	// go test's cache knows the result depends on them.
	for _, pattern := range []string{"*.cu", "*.cuh", "cpushim/*"} {
		files, _ := filepath.Glob(filepath.Join("../../kernels/cuda", pattern))
		for _, f := range files {
			if _, err := os.ReadFile(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	if errors.Is(cudaEmulator.err, exec.ErrNotFound) && os.Getenv("CI") == "" {
		t.Skipf("no C++ compiler for the CUDA emulator: %v", cudaEmulator.err)
	}
	if cudaEmulator.err != nil {
		t.Fatal(cudaEmulator.err)
	}
	drv := cudafake.NewEmulatedDriver(1, 0, cudaEmulator.emu)
	dev, err := cuda.OpenWith(drv, cudafake.NewBLAS(drv), 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cuda.NewBackend(dev, kernels.PrecisionF32)
	if err != nil {
		dev.Close()
		t.Fatal(err)
	}
	return b
}

// checkCUDAGolden runs golden case name through b (runGolden: logits with
// and without the adapter, logprobs, entropy and every LoRA gradient, with
// and without checkpointing, at the bounds the CPU meets), then checks that
// the model and adapter gave all their device memory back, and closes b.
func checkCUDAGolden(t *testing.T, b *cuda.Backend, name string) {
	t.Helper()
	start := time.Now()
	runGolden(t, b, name)
	t.Logf("%s on %s: %v", name, b.Name(), time.Since(start).Round(time.Millisecond))
	if n, bytes := b.Device().Live(); n > 1 { // the int32 scratch may stay
		t.Errorf("%d device buffers (%d bytes) live after Close and Free, want the int32 scratch at most", n, bytes)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestGoldenCUDAEmulated runs the qwen2 golden (the smallest: 2 layers,
// hidden 56, vocab 311) through cuda.Backend on the emulated device. The
// emulator is slow (a launch is 60–450 ms on loaded cores), so the other
// families and the bfloat16 matrices run under HONE_LONG_TESTS=1
// (`make test-long`).
func TestGoldenCUDAEmulated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model's kernels on the CPU emulation of the CUDA device")
	}
	cases := []string{"qwen2"}
	if os.Getenv("HONE_LONG_TESTS") != "" {
		cases = append(cases, "llama", "qwen3", "gemma3", "qwen2+bf16")
	}
	for _, name := range cases {
		t.Run(name, func(t *testing.T) {
			checkCUDAGolden(t, emulatedCUDABackend(t), name)
		})
	}
}

// TestGoldenCUDAOnHardware runs every family's golden through cuda.Backend
// on device 0 with the real driver and cuBLAS. It runs only when
// HONE_CUDA_TEST=1 (bin/gpu-check/run.sh sets it), from a folder where
// goldenDir holds the golden files.
func TestGoldenCUDAOnHardware(t *testing.T) {
	if os.Getenv("HONE_CUDA_TEST") != "1" {
		t.Skip("set HONE_CUDA_TEST=1 on a machine with a CUDA device")
	}
	for _, name := range append(goldenCases, "qwen2+bf16") {
		t.Run(name, func(t *testing.T) {
			b, err := cuda.OpenBackend(cuda.Options{DriverLib: os.Getenv("HONE_LIBCUDA"), BLASLib: os.Getenv("HONE_LIBCUBLAS")}, kernels.PrecisionF32)
			if err != nil {
				t.Fatal(err)
			}
			checkCUDAGolden(t, b, name)
		})
	}
}

// TestStepCUDAEmulated decodes through the KV cache on cuda.Backend on the
// emulated device (checkStepMatchesFull: a prompt prefill, then a token a
// step, three sequences a step, in one AttentionDecodeBatch a layer), on
// Gemma 3's micro model: grouped-query heads, and a sliding layer whose
// window (3) is shorter than the prompts and the sequences.
func TestStepCUDAEmulated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model's kernels on the CPU emulation of the CUDA device")
	}
	b := emulatedCUDABackend(t)
	start := time.Now()
	checkStepMatchesFull(t, b, "gemma3_text", "f32")
	t.Logf("on %s: %v", b.Name(), time.Since(start).Round(time.Millisecond))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

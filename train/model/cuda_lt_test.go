package model

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/cudafake"
)

// TestBF16LtCUDAEmulated runs the qwen2 golden case (bfloat16 base
// weights, LoRA on every module) forward and backward on two emulated
// devices computing in bf16: one whose linear layers' GEMMs run on
// cublasGemmEx, one on cuBLASLt (cuda.Backend.SetGEMMLibrary, the fake's
// cublasLtMatmul with its checks of every descriptor, heuristic and
// workspace). The logprobs, entropies and every LoRA gradient are the same
// bits: the two libraries get the same products.
func TestBF16LtCUDAEmulated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model's kernels on the CPU emulation of the CUDA device")
	}
	const name = "qwen2"
	ctx := context.Background()
	type result struct {
		logprob, entropy []float32
		grads            map[string][]float32
	}
	f32, err := cpu.New(cpu.Options{MinParallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f32.Close()
	gc := loadGoldenCase(t, name, f32)
	run := func(b *cuda.Backend) result {
		defer func() {
			if err := b.Close(); err != nil {
				t.Error(err)
			}
		}()
		dir := filepath.Join(goldenDir, name)
		m, err := LoadBF16(filepath.Join(dir, "model"), b)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		ad, err := ReadAdapter(filepath.Join(dir, "adapter"), &m.Config)
		if err != nil {
			t.Fatal(err)
		}
		if err := ad.Place(b); err != nil {
			t.Fatal(err)
		}
		defer ad.Free()
		p, err := m.Forward(ctx, gc.batch, ad, TrainOptions{Chunk: 64})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Release()
		if err := p.Backward(ctx, gc.weight, nil); err != nil {
			t.Fatal(err)
		}
		r := result{logprob: slices.Clone(p.Logprob), entropy: slices.Clone(p.Entropy), grads: map[string][]float32{}}
		ad.Params(func(pname string, _, g []float32) { r.grads[pname] = slices.Clone(g) })
		return r
	}
	be, _, _ := emulatedCUDABackendBLAS(t, kernels.PrecisionBF16)
	want := run(be)

	drv := cudafake.NewEmulatedDriver(1, 0, cudaEmulator.emu)
	dev, err := cuda.OpenWith(drv, cudafake.NewBLAS(drv), 0)
	if err != nil {
		t.Fatal(err)
	}
	lt := cudafake.NewBLASLt(drv)
	if err := dev.UseBLASLt(lt); err != nil {
		t.Fatal(err)
	}
	bl, err := cuda.NewBackend(dev, kernels.PrecisionBF16)
	if err != nil {
		dev.Close()
		t.Fatal(err)
	}
	if err := bl.SetGEMMLibrary(cuda.GEMMCublasLt); err != nil {
		bl.Close()
		t.Fatal(err)
	}
	got := run(bl)
	if lt.Matmuls() == 0 {
		t.Fatal("no cublasLtMatmul ran")
	}
	t.Logf("%d cublasLtMatmul calls, %d heuristic calls", lt.Matmuls(), dev.LtHeuristicCalls())
	if h := dev.LtHeuristicCalls(); h == 0 || h >= lt.Matmuls() {
		t.Errorf("%d heuristic calls for %d matmuls: the plans are not reused", h, lt.Matmuls())
	}
	if !slices.Equal(got.logprob, want.logprob) || !slices.Equal(got.entropy, want.entropy) {
		t.Errorf("logprobs or entropies differ between cuBLASLt and cublasGemmEx")
	}
	if len(got.grads) == 0 || len(got.grads) != len(want.grads) {
		t.Fatalf("%d gradients through cuBLASLt, %d through GemmEx", len(got.grads), len(want.grads))
	}
	for pname, g := range want.grads {
		if !slices.Equal(got.grads[pname], g) {
			t.Errorf("gradient %s differs between cuBLASLt and cublasGemmEx", pname)
		}
	}
	if n := lt.Live(); n != 0 {
		t.Errorf("%d cuBLASLt handles or descriptors left after Close", n)
	}
}

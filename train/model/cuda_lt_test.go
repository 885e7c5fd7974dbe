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
// bits: the two libraries get the same products. Then the llama case
// (whose MLP qualifies) with its gate and up held as bfloat16
// (TrainOptions.GateUpBF16): the products storing a bfloat16 C on a
// weight (gate and up, the down projection's dact) go through cuBLASLt
// too; of those with a bfloat16 C, only rank-r LoRA products are left to
// cublasGemmEx.
func TestBF16LtCUDAEmulated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model's kernels on the CPU emulation of the CUDA device")
	}
	t.Run("qwen2", func(t *testing.T) { bf16LtCUDAEmulated(t, "qwen2", false) })
	t.Run("llama GateUpBF16", func(t *testing.T) { bf16LtCUDAEmulated(t, "llama", true) })
}

func bf16LtCUDAEmulated(t *testing.T, name string, gateUpBF16 bool) {
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
	var rank int
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
		if gateUpBF16 && !m.GateUpHeld(ad) {
			t.Fatal("the gate and up projections are not held as bfloat16 on this model")
		}
		rank = ad.Config.Rank
		p, err := m.Forward(ctx, gc.batch, ad, TrainOptions{Chunk: 64, GateUpBF16: gateUpBF16})
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
	blas := cudafake.NewBLAS(drv)
	dev, err := cuda.OpenWith(drv, blas, 0)
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
	// What cublasGemmEx ran beside cuBLASLt with a bfloat16 C: the LoRA
	// products (one of M, N, K is the rank) only. (The chunked logprob
	// ops' products, float32 C, stay on it by design: SetGEMMLibrary.)
	types, gemms := blas.GemmTypes(), blas.Gemms()
	cBF := 0
	for i, g := range gemms {
		if types[i].C != cuda.R16BF {
			continue
		}
		cBF++
		if min(g.M, g.N, g.K) != rank {
			t.Errorf("cublasGemmEx ran a product storing a bfloat16 C of M=%d N=%d K=%d with cuBLASLt picked", g.M, g.N, g.K)
		}
	}
	t.Logf("cublasGemmEx beside cuBLASLt: %d products, %d with a bfloat16 C", len(gemms), cBF)
	if gateUpBF16 && cBF == 0 {
		t.Error("no LoRA product stored a bfloat16 C on cublasGemmEx: the held path did not run")
	}
}

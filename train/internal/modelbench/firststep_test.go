package main

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/train/model"
)

// The bounds gpucheck/run.sh's first_step_agrees holds a 7B row's first
// step to against tc1's: the mean logprob relative to it, the norm and
// probe of each of the q, k and v gradients relative to that norm. The
// probe's bound is the wider: on the emulated device two correct
// attentions' probes of k (the smallest of the three gradients) differ
// by up to 0.07 of its norm.
const (
	firstLogprobBound = 1e-3
	firstNormBound    = 0.1
	firstProbeBound   = 0.5
)

// firstStepDiffs returns how far got's first-step figures are from want's,
// each as first_step_agrees measures it: the mean logprob's, and the
// largest over q, k and v of the norm's and the probe's.
func firstStepDiffs(got, want workerResult) (lp, norm, probe float64) {
	lp = math.Abs(got.FirstLogprob-want.FirstLogprob) / math.Abs(want.FirstLogprob)
	g, w := got.projections(), want.projections()
	for i := range g {
		norm = max(norm, math.Abs(g[i][0]-w[i][0])/w[i][0])
		probe = max(probe, math.Abs(g[i][1]-w[i][1])/w[i][0])
	}
	return lp, norm, probe
}

// projections returns r's first-step norm and probe of q, k and v.
func (r workerResult) projections() [3][2]float64 {
	return [3][2]float64{{r.FirstQGradNorm, r.FirstQGradProbe}, {r.FirstKGradNorm, r.FirstKGradProbe}, {r.FirstVGradNorm, r.FirstVGradProbe}}
}

// firstStep runs the worker's training step (one timed step after the
// first) on the tiny shape, its weights filled as the worker fills them.
func firstStep(t *testing.T, be kernels.Backend, wdt model.WeightDType) workerResult {
	t.Helper()
	c, err := shapeConfig("tiny")
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.NewAs(c, be, wdt)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	fill(m)
	res, err := trainWorker(context.Background(), m, rand.New(rand.NewPCG(1, 2)), 1, 64, 1, 16, model.TrainOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// checkFirstStep fails t unless r's figures are those of a step that
// learns something: a negative mean logprob, and q, k and v gradients in
// (0, the whole gradient's norm].
func checkFirstStep(t *testing.T, r workerResult) {
	t.Helper()
	for _, p := range r.projections() {
		if p[0] <= 0 || p[0] > r.FirstGradNorm || r.FirstLogprob >= 0 {
			t.Fatalf("first step: mean logprob %v, gradient norm %v, q, k, v norms and probes %v: want a negative logprob and norms in (0, the whole norm]",
				r.FirstLogprob, r.FirstGradNorm, r.projections())
		}
	}
}

// brokenAttention is a backend whose attention backward is wrong in one
// way (mode), a stand-in for a training attention kernel that is wrong on
// the device: "" none, "dq", "dk" or "dv" zero that gradient, "swap"
// trades dk and dv.
type brokenAttention struct {
	kernels.Backend
	mode string
}

func (b brokenAttention) AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D int, scale float32) {
	b.Backend.AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D, scale)
	switch b.mode {
	case "dq":
		clear(dq[:N*H*D])
	case "dk":
		clear(dk[:N*KVH*D])
	case "dv":
		clear(dv[:N*KVH*D])
	case "swap":
		n := N * KVH * D
		for i := range n {
			dk[i], dv[i] = dv[i], dk[i]
		}
	}
}

// TestWorkerFirstStep checks the figures the device check's
// first_step_agrees compares between two 7B rows (the worker's untimed
// first step: mean logprob, the q, k and v LoRA gradients' norm and
// signed probe). A step whose attention backward loses dq, dk or dv, or
// swaps dk and dv (brokenAttention, on the CPU), falls outside the bounds;
// the training attentions of kernels/cuda's bf16 precision on the
// emulated device (tc1, tc3k64 and gemm; tc2 and tc3 too under
// HONE_LONG_TESTS) agree with one another well inside them.
func TestWorkerFirstStep(t *testing.T) {
	cb, err := cpu.New(cpu.Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	ref := firstStep(t, brokenAttention{Backend: cb}, model.DTypeFloat32)
	checkFirstStep(t, ref)
	for _, mode := range []string{"dq", "dk", "dv", "swap"} {
		got := firstStep(t, brokenAttention{Backend: cb, mode: mode}, model.DTypeFloat32)
		lp, norm, probe := firstStepDiffs(got, ref)
		t.Logf("attention backward broken (%s): mean logprob %.1e, the largest over q, k, v of the norm's %.3f and the probe's %.3f (of the norm)", mode, lp, norm, probe)
		if lp > firstLogprobBound {
			t.Errorf("%s: the forward moved (%.1e): the break is in the backward only", mode, lp)
		}
		if norm <= firstNormBound && probe <= firstProbeBound {
			t.Errorf("%s: norm %.3f and probe %.3f within the bounds %v, %v: the check misses this break", mode, norm, probe, firstNormBound, firstProbeBound)
		}
	}

	libs := emulatingLibs(t)
	kerns := []string{cuda.AttentionTC1, cuda.AttentionTC3K64, cuda.AttentionGEMM}
	if os.Getenv("HONE_LONG_TESTS") != "" {
		kerns = append(kerns, cuda.AttentionTC2, cuda.AttentionTC3)
	}
	var tc1 workerResult
	for i, k := range kerns {
		be, err := cuda.OpenBackend(cuda.Options{DriverLib: libs.Driver, BLASLib: libs.BLAS}, kernels.PrecisionBF16)
		if err != nil {
			t.Fatal(err)
		}
		if err := configureCUDA(be, k, cuda.GEMMCublas, "op"); err != nil {
			t.Fatal(err)
		}
		got := firstStep(t, be, model.DTypeBFloat16)
		be.Close()
		checkFirstStep(t, got)
		if i == 0 {
			tc1 = got
			continue
		}
		lp, norm, probe := firstStepDiffs(got, tc1)
		t.Logf("%s against tc1: mean logprob %.1e, the largest over q, k, v of the norm's %.1e and the probe's %.1e (of the norm)", k, lp, norm, probe)
		if lp > firstLogprobBound/4 || norm > firstNormBound/4 || probe > firstProbeBound/4 {
			t.Errorf("%s against tc1: mean logprob %.1e, norm %.1e, probe %.1e: want a quarter of the device check's bounds (%v, %v, %v) at most",
				k, lp, norm, probe, firstLogprobBound, firstNormBound, firstProbeBound)
		}
	}
}

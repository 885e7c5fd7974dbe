package cuda_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
)

// gatedLoRAOnShim runs gated_lora.cu's kernels on the CPU shim: act_bf the
// bits swiglu_forward_bf16 (geglu_forward_bf16) writes, u = scale·(act·Aᵀ)
// within float32's bound of a float64 sum of the float32 act and of
// kernels/ref's LinearForward then Scale; on shapes with a partial row
// block, a partial column chunk, one and two rank passes (R 16, 17, 32)
// and I 0 (u zeros), and nothing written past act_bf's N·I or u's N·R
// values (the buffers carry NaN tails that must come back untouched).
func gatedLoRAOnShim(t *testing.T, h shimHarness) {
	r := rand.New(rand.NewPCG(18944, 16))
	for _, gelu := range []bool{false, true} {
		for _, s := range []struct{ N, I, R int }{{1, 1, 1}, {33, 70, 5}, {64, 64, 16}, {40, 96, 17}, {3, 37, 32}, {5, 0, 3}} {
			name := fmt.Sprintf("gelu %v, N %d, I %d, R %d", gelu, s.N, s.I, s.R)
			t.Run(name, func(t *testing.T) {
				N, I, R := s.N, s.I, s.R
				const scale = 0.37
				gate, up, a := randn(r, N*I), randn(r, N*I), randn(r, R*I)
				const tail = 5
				nanBF := uint16(0x7fc1)
				actBF := slices.Repeat([]uint16{nanBF}, N*I+tail)
				u := slices.Repeat([]float32{float32(math.NaN())}, N*R+tail)
				plan := cuda.PlanGatedLoRAForward(actBF, u, gate, up, a, N, I, R, scale, gelu)
				if len(plan) != 1 {
					t.Fatalf("%d launches, want 1", len(plan))
				}
				if err := h.run(plan[0]); err != nil {
					t.Fatal(err)
				}
				for i, v := range actBF[N*I:] {
					if v != nanBF {
						t.Fatalf("act_bf[%d] written, past N·I", N*I+i)
					}
				}
				for i, v := range u[N*R:] {
					if !math.IsNaN(float64(v)) {
						t.Fatalf("u[%d] written, past N·R", N*R+i)
					}
				}
				// The unfused gated unit's float32 act and its rounding.
				act, wantBF := make([]float32, N*I), make([]uint16, N*I)
				kernel := map[bool]string{false: "swiglu_forward_bf16", true: "geglu_forward_bf16"}[gelu]
				if N*I > 0 {
					h.runPlan(cuda.PlanFlat(kernel, N*I, act, wantBF, gate, up, N*I))
				}
				if !slices.Equal(actBF[:N*I], wantBF) {
					t.Fatalf("act_bf differs from %s's", kernel)
				}
				want64 := make([]float32, N*R)
				for n := range N {
					for k := range R {
						var sum float64
						for i := range I {
							sum += float64(act[n*I+i]) * float64(a[k*I+i])
						}
						want64[n*R+k] = float32(scale * sum)
					}
				}
				near(t, "u against a float64 sum", u[:N*R], want64, kerneltest.F32Tol)
				wantRef := make([]float32, N*R)
				rb := ref.New()
				rb.LinearForward(wantRef, act, a, nil, N, I, R)
				rb.Scale(wantRef, wantRef, scale, N*R)
				near(t, "u against ref's LinearForward then Scale", u[:N*R], wantRef, kerneltest.F32Tol)
			})
		}
	}
}

// gatedLoRABackwardOnShim runs gated_lora.cu's backward kernels on the CPU
// shim: dgate_bf and dup_bf the bits swiglu_backward_set_bf16
// (geglu_backward_set_bf16) writes there, from dact as float32 and as
// bfloat16; da += round(g)ᵀ·round(act) within float32's bound of a
// float64 sum onto da's old values, and of kernels/ref's Matmul on the
// widened roundings at beta 1; on shapes with a partial column block, a
// partial row tile, ranks 1 to 16; nothing written past the outputs'
// sizes (NaN tails).
func gatedLoRABackwardOnShim(t *testing.T, h shimHarness) {
	r := rand.New(rand.NewPCG(18944, 17))
	for _, gelu := range []bool{false, true} {
		for _, bfDact := range []bool{false, true} {
			for _, s := range []struct{ N, I, R int }{{1, 1, 1}, {33, 70, 5}, {40, 130, 16}, {17, 64, 3}} {
				name := fmt.Sprintf("gelu %v, dact bf16 %v, N %d, I %d, R %d", gelu, bfDact, s.N, s.I, s.R)
				t.Run(name, func(t *testing.T) {
					N, I, R := s.N, s.I, s.R
					gate, up, g := randn(r, N*I), randn(r, N*I), randn(r, N*R)
					dact, dactBF := randDact(r, N*I, bfDact)
					const tail = 5
					nanBF := uint16(0x7fc1)
					dgBF := slices.Repeat([]uint16{nanBF}, N*I+tail)
					duBF := slices.Repeat([]uint16{nanBF}, N*I+tail)
					da0 := randn(r, R*I)
					da := append(slices.Clone(da0), slices.Repeat([]float32{float32(math.NaN())}, tail)...)
					plan := cuda.PlanGatedLoRABackward(dgBF, duBF, da, g, dact, dactBF, gate, up, N, I, R, gelu)
					if len(plan) != 1 {
						t.Fatalf("%d launches, want 1", len(plan))
					}
					if err := h.run(plan[0]); err != nil {
						t.Fatal(err)
					}
					for i := range tail {
						if dgBF[N*I+i] != nanBF || duBF[N*I+i] != nanBF || !math.IsNaN(float64(da[R*I+i])) {
							t.Fatalf("written past the outputs' sizes (tail element %d)", i)
						}
					}
					// The unfused gated backward: the roundings and act's.
					wantDG, wantDU, actBF := make([]uint16, N*I), make([]uint16, N*I), make([]uint16, N*I)
					kernel := map[bool]string{false: "swiglu_backward_set_bf16", true: "geglu_backward_set_bf16"}[gelu]
					h.runPlan(cuda.PlanFlat(kernel, N*I, []float32(nil), []float32(nil), []float32(nil), actBF, wantDG, wantDU, dact, dactBF, gate, up, N*I))
					if !slices.Equal(dgBF[:N*I], wantDG) || !slices.Equal(duBF[:N*I], wantDU) {
						t.Fatalf("the roundings of dgate or dup differ from %s's", kernel)
					}
					act, gr := make([]float32, N*I), make([]float32, N*R)
					kernels.FromBF16(act, actBF)
					gBF := make([]uint16, N*R)
					kernels.ToBF16(gBF, g)
					kernels.FromBF16(gr, gBF)
					want64 := make([]float32, R*I)
					for k := range R {
						for i := range I {
							sum := float64(0)
							for n := range N {
								sum += float64(gr[n*R+k]) * float64(act[n*I+i])
							}
							want64[k*I+i] = float32(float64(da0[k*I+i]) + sum)
						}
					}
					near(t, "DA against a float64 sum", da[:R*I], want64, kerneltest.F32Tol)
					wantRef := slices.Clone(da0)
					ref.New().Matmul(wantRef, gr, act, R, I, N, true, false, 1)
					near(t, "DA against ref's Matmul", da[:R*I], wantRef, kerneltest.F32Tol)
				})
			}
		}
	}
}

// gatedLoRABF16InOnShim runs gated_lora.cu's _bf16in kernels (gate and up
// bfloat16, kernels.GateUpRounder) on the CPU shim: every output the same
// bits as the float32 kernels' for the widened gate and up, forward (act_bf
// and u) and backward (dgate_bf, dup_bf and DA, from dact as float32 and
// as bfloat16), for SwiGLU and GeGLU, on shapes with partial blocks, one
// and two forward rank passes, and nothing written past the outputs'
// sizes (NaN tails).
func gatedLoRABF16InOnShim(t *testing.T, h shimHarness) {
	r := rand.New(rand.NewPCG(18944, 18))
	nanBF := uint16(0x7fc1)
	const tail = 5
	nanF32 := func(n int) []float32 { return slices.Repeat([]float32{float32(math.NaN())}, n+tail) }
	nanBF16 := func(n int) []uint16 { return slices.Repeat([]uint16{nanBF}, n+tail) }
	for _, gelu := range []bool{false, true} {
		for _, s := range []struct{ N, I, R int }{{1, 1, 1}, {33, 70, 5}, {40, 96, 16}, {3, 37, 17}} {
			N, I, R := s.N, s.I, s.R
			t.Run(fmt.Sprintf("gelu %v, N %d, I %d, R %d", gelu, N, I, R), func(t *testing.T) {
				gateBF, upBF := make([]uint16, N*I), make([]uint16, N*I)
				kernels.ToBF16(gateBF, randn(r, N*I))
				kernels.ToBF16(upBF, randn(r, N*I))
				gate, up := make([]float32, N*I), make([]float32, N*I)
				kernels.FromBF16(gate, gateBF)
				kernels.FromBF16(up, upBF)
				a := randn(r, R*I)
				const scale = 0.37
				run := func(plan []cuda.Step) {
					t.Helper()
					if len(plan) != 1 {
						t.Fatalf("%d launches, want 1", len(plan))
					}
					if err := h.run(plan[0]); err != nil {
						t.Fatal(err)
					}
				}
				actBF, u := nanBF16(N*I), nanF32(N*R)
				wantActBF, wantU := nanBF16(N*I), nanF32(N*R)
				run(cuda.PlanGatedLoRAForwardBF16(actBF, u, gateBF, upBF, a, N, I, R, scale, gelu))
				run(cuda.PlanGatedLoRAForward(wantActBF, wantU, gate, up, a, N, I, R, scale, gelu))
				if !slices.Equal(actBF, wantActBF) {
					t.Errorf("forward: act_bf (or its tail) differs from the float32 kernel's")
				}
				if !sameBits(u, wantU) {
					t.Errorf("forward: u (or its tail) differs from the float32 kernel's")
				}
				if R > cuda.GatedLoRABackwardMaxRank {
					return
				}
				g := randn(r, N*R)
				for _, bfDact := range []bool{false, true} {
					dact, dactBF := randDact(r, N*I, bfDact)
					da0 := randn(r, R*I)
					dg, du, da := nanBF16(N*I), nanBF16(N*I), append(slices.Clone(da0), nanF32(0)...)
					wdg, wdu, wda := nanBF16(N*I), nanBF16(N*I), append(slices.Clone(da0), nanF32(0)...)
					run(cuda.PlanGatedLoRABackwardBF16(dg, du, da, g, dact, dactBF, gateBF, upBF, N, I, R, gelu))
					run(cuda.PlanGatedLoRABackward(wdg, wdu, wda, g, dact, dactBF, gate, up, N, I, R, gelu))
					if !slices.Equal(dg, wdg) || !slices.Equal(du, wdu) {
						t.Errorf("backward, dact bf16 %v: dgate_bf or dup_bf (or a tail) differs from the float32 kernel's", bfDact)
					}
					if !sameBits(da, wda) {
						t.Errorf("backward, dact bf16 %v: DA (or its tail) differs from the float32 kernel's", bfDact)
					}
				}
			})
		}
	}
}

// randDact is n random values of a gated backward's dact: as float32, or
// where bf16 as their bfloat16 roundings (the other nil).
func randDact(r *rand.Rand, n int, bf16 bool) ([]float32, []uint16) {
	if !bf16 {
		return randn(r, n), nil
	}
	bf := make([]uint16, n)
	kernels.ToBF16(bf, randn(r, n))
	return nil, bf
}

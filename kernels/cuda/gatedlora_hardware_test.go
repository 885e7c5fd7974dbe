package cuda_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hone-rl/hone/kernels"
)

// TestGatedLoRAOnHardware: Backend.GatedLoRAForwardRounded
// (gated_lora.cu) against the unfused ops the model ran before it (the
// gated unit writing act and its bf16 copy, then LinearForward and Scale
// for the down projection's u = scale·act·Aᵀ): act's copy the same bits,
// u within kernels.F32Tol (both exact float32 products, summed in another
// order), for SwiGLU and GeGLU; on small odd shapes (one and two rank
// passes) and, not with -test.short, on the 7B step's down projection (8
// × 1024 tokens, I 18944, rank 16), both ways timed (log GATEDLORA). Not
// run on a GPU yet.
func TestGatedLoRAOnHardware(t *testing.T) {
	b := hardwareBackend(t, kernels.PrecisionBF16)
	alloc, allocBF := backendAllocs(t, b)
	r := rand.New(rand.NewPCG(28, 18945))
	f32 := randnIn(alloc, r)
	type shape struct{ N, I, R int }
	shapes := []shape{{37, 70, 5}, {40, 96, 17}}
	if !testing.Short() {
		shapes = append(shapes, shape{8 * 1024, 18944, 16})
	}
	for _, s := range shapes {
		// The inputs and outputs once a shape, for both activations: at
		// the 7B shape, filling 155M values a buffer takes a core about a
		// second.
		N, I, R := s.N, s.I, s.R
		NI := N * I
		gate, up, a := f32(NI, 1), f32(NI, 1), f32(R*I, 0.02)
		act, wantBF, wantU := alloc(NI), allocBF(NI), alloc(N*R)
		actBF, u := allocBF(NI), alloc(N*R)
		for _, gelu := range []bool{false, true} {
			name := map[bool]string{false: "swiglu", true: "geglu"}[gelu]
			t.Run(fmt.Sprintf("%s N %d I %d R %d", name, N, I, R), func(t *testing.T) {
				const scale = 2.0
				unfused := func() {
					if gelu {
						b.GeGLUForwardRounded(act, wantBF, gate, up, NI)
					} else {
						b.SwiGLUForwardRounded(act, wantBF, gate, up, NI)
					}
					b.LinearForward(wantU, act, a, nil, N, I, R)
					b.Scale(wantU, wantU, scale, N*R)
				}
				fused := func() { b.GatedLoRAForwardRounded(actBF, u, gate, up, a, N, I, R, scale, gelu) }
				unfused()
				fused()
				b.Synchronize()
				if !slices.Equal(actBF, wantBF) {
					t.Fatalf("act's bf16 copy differs from %sForwardRounded's", map[bool]string{false: "SwiGLU", true: "GeGLU"}[gelu])
				}
				near(t, "u", u, wantU, kernels.F32Tol)
				if testing.Short() || N < 1024 {
					return
				}
				tu, tf := timePerCall(b, unfused), timePerCall(b, fused)
				t.Logf("GATEDLORA %s (N %d, I %d, R %d): gated unit + LinearForward + Scale %.0f µs, GatedLoRAForwardRounded %.0f µs: %.2fx",
					name, N, I, R, us(tu), us(tf), tu.Seconds()/tf.Seconds())
			})
		}
	}
}

// TestGatedLoRABackwardOnHardware: Backend.GatedLoRABackwardRounded
// (gated_lora.cu) against the unfused ops the model ran before it (the
// gated backward writing the roundings of dgate, dup and act, then
// MatmulBF16's DA += gᵀ·act at beta 1): the roundings the same bits, DA
// within kernels.F32Tol (the same exact products, summed in another
// order), for SwiGLU and GeGLU, dact as bfloat16 (the model's) and as
// float32; on small odd shapes and, not with -test.short, on the 7B
// step's down projection (8 × 1024 tokens, I 18944, rank 16), both ways
// timed (log GATEDLORABWD). Not run on a GPU yet.
func TestGatedLoRABackwardOnHardware(t *testing.T) {
	b := hardwareBackend(t, kernels.PrecisionBF16)
	alloc, allocBF := backendAllocs(t, b)
	r := rand.New(rand.NewPCG(28, 18946))
	f32 := randnIn(alloc, r)
	type shape struct{ N, I, R int }
	shapes := []shape{{37, 70, 5}, {40, 130, 16}}
	if !testing.Short() {
		shapes = append(shapes, shape{8 * 1024, 18944, 16})
	}
	for _, s := range shapes {
		// The inputs and outputs once a shape, for every variant (see
		// TestGatedLoRAOnHardware); DA starts from da0 in each.
		N, I, R := s.N, s.I, s.R
		NI := N * I
		gate, up, g, da0 := f32(NI, 1), f32(NI, 1), f32(N*R, 0.1), f32(R*I, 0.01)
		dactF32, dactBF16 := f32(NI, 1), allocBF(NI)
		kernels.ToBF16(dactBF16, dactF32)
		dg, du, da := allocBF(NI), allocBF(NI), alloc(R*I)
		wantDG, wantDU, actBF, wantDA := allocBF(NI), allocBF(NI), allocBF(NI), alloc(R*I)
		for _, gelu := range []bool{false, true} {
			for _, bfDact := range []bool{true, false} {
				name := map[bool]string{false: "swiglu", true: "geglu"}[gelu]
				t.Run(fmt.Sprintf("%s dact bf16 %v N %d I %d R %d", name, bfDact, N, I, R), func(t *testing.T) {
					dact, dactBF := dactF32, []uint16(nil)
					if bfDact {
						dact, dactBF = nil, dactBF16
					}
					unfused := func() {
						if gelu {
							b.GeGLUBackwardSetRounded(nil, nil, nil, actBF, wantDG, wantDU, dact, dactBF, gate, up, NI)
						} else {
							b.SwiGLUBackwardSetRounded(nil, nil, nil, actBF, wantDG, wantDU, dact, dactBF, gate, up, NI)
						}
						b.MatmulBF16(wantDA, g, nil, nil, actBF, R, I, N, true, false, 1)
					}
					fused := func() { b.GatedLoRABackwardRounded(dg, du, da, g, dact, dactBF, gate, up, N, I, R, gelu) }
					b.Copy(wantDA, da0, R*I)
					b.Copy(da, da0, R*I)
					unfused()
					fused()
					b.Synchronize()
					if !slices.Equal(dg, wantDG) || !slices.Equal(du, wantDU) {
						t.Fatal("the roundings of dgate or dup differ from the gated backward's")
					}
					near(t, "DA", da, wantDA, kernels.F32Tol)
					if testing.Short() || N < 1024 {
						return
					}
					// Both accumulate into DA on every call: the timing runs
					// leave it growing, which costs nothing.
					tu, tf := timePerCall(b, unfused), timePerCall(b, fused)
					t.Logf("GATEDLORABWD %s, dact bf16 %v (N %d, I %d, R %d): gated backward + MatmulBF16 %.0f µs, GatedLoRABackwardRounded %.0f µs: %.2fx",
						name, bfDact, N, I, R, us(tu), us(tf), tu.Seconds()/tf.Seconds())
				})
			}
		}
	}
}

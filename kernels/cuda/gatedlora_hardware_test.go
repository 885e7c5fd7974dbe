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
	f32 := func(n int, scale float64) []float32 {
		x := alloc(n)
		for i := range x {
			x[i] = float32(scale * r.NormFloat64())
		}
		return x
	}
	type shape struct{ N, I, R int }
	shapes := []shape{{37, 70, 5}, {40, 96, 17}}
	if !testing.Short() {
		shapes = append(shapes, shape{8 * 1024, 18944, 16})
	}
	for _, s := range shapes {
		for _, gelu := range []bool{false, true} {
			name := map[bool]string{false: "swiglu", true: "geglu"}[gelu]
			t.Run(fmt.Sprintf("%s N %d I %d R %d", name, s.N, s.I, s.R), func(t *testing.T) {
				N, I, R := s.N, s.I, s.R
				NI := N * I
				const scale = 2.0
				gate, up, a := f32(NI, 1), f32(NI, 1), f32(R*I, 0.02)
				act, wantBF, wantU := alloc(NI), allocBF(NI), alloc(N*R)
				actBF, u := allocBF(NI), alloc(N*R)
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

package cuda_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hone-rl/hone/kernels"
)

// TestAddRMSNormOnHardware: Backend.AddRMSNormForward (rmsnorm_forward_add,
// the residual stream updated in place, with and without the bf16 copy)
// gives the bits of Add followed by RMSNormForwardRounded or
// RMSNormForward, in both precisions, on the 7B step's residual stream
// (8 × 1024 tokens, C 3584; 3 × 37 with -test.short); both ways timed
// (log ADDNORM). Not run on a GPU yet.
func TestAddRMSNormOnHardware(t *testing.T) {
	N, C := 8*1024, 3584
	if testing.Short() {
		N, C = 3, 37
	}
	for _, prec := range []kernels.Precision{kernels.PrecisionF32, kernels.PrecisionBF16} {
		t.Run(prec.String(), func(t *testing.T) {
			b := hardwareBackend(t, prec)
			alloc, allocBF := backendAllocs(t, b)
			r := rand.New(rand.NewPCG(28, 3584))
			f32 := func(n int) []float32 {
				x := alloc(n)
				copy(x, randn(r, n))
				return x
			}
			attn, res, weight := f32(N*C), f32(N*C), f32(C)
			x2, wantX2 := alloc(N*C), alloc(N*C)
			h, rstd, hBF := alloc(N*C), alloc(N), allocBF(N*C)
			wantH, wantR, wantBF := alloc(N*C), alloc(N), allocBF(N*C)
			for _, withBF := range []bool{true, false} {
				var bf, wbf []uint16
				if withBF {
					bf, wbf = hBF, wantBF
				}
				unfused := func() {
					b.Copy(wantX2, attn, N*C)
					b.Add(wantX2, wantX2, res, N*C)
					if withBF {
						b.RMSNormForwardRounded(wantH, wantR, wbf, wantX2, weight, N, C, 1e-6)
					} else {
						b.RMSNormForward(wantH, wantR, wantX2, weight, N, C, 1e-6)
					}
				}
				fused := func() {
					b.Copy(x2, attn, N*C)
					b.AddRMSNormForward(x2, h, rstd, bf, x2, res, weight, N, C, 1e-6)
				}
				unfused()
				fused()
				b.Synchronize()
				for _, c := range []struct {
					name      string
					got, want []float32
				}{{"sum", x2, wantX2}, {"out", h, wantH}, {"rstd", rstd, wantR}} {
					if !sameBits(c.got, c.want) {
						t.Fatalf("outBF %v: %s differs from Add then the norm", withBF, c.name)
					}
				}
				if withBF && !slices.Equal(hBF, wantBF) {
					t.Fatalf("outBF differs from RMSNormForwardRounded's")
				}
				if testing.Short() {
					continue
				}
				// Both ways include the same Copy restoring the
				// attention's output, which the in-place sum overwrote.
				tu, tf := timePerCall(b, unfused), timePerCall(b, fused)
				t.Logf("ADDNORM %s, outBF %v (N %d, C %d): Add + norm %.0f µs, AddRMSNormForward %.0f µs: %.2fx",
					prec, withBF, N, C, us(tu), us(tf), tu.Seconds()/tf.Seconds())
			}
		})
	}
}

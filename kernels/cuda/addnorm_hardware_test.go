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
			f32 := randnIn(alloc, r)
			attn, res, weight := f32(N*C, 1), f32(N*C, 1), f32(C, 1)
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

// TestRMSNormBackwardRoundedOnHardware: Backend.RMSNormBackwardRounded
// (rmsnorm_backward_bf16) accumulates the bits RMSNormBackward does and
// writes kernels.ToBF16's rounding of them, and the o projection's base
// product on that copy (LinearBackwardBF16Rounded) gives the bits of
// LinearBackwardBF16 on the float32 gradient, and the down projection's
// (LinearBackwardBF16ToRounded) those of LinearBackwardBF16To, on the 7B
// step's shapes
// (8 × 1024 tokens, C 3584; 3 × 37 with -test.short); the norm's backward
// plus the product timed both ways (log NORMDOUT). Not run on a GPU yet.
func TestRMSNormBackwardRoundedOnHardware(t *testing.T) {
	N, C := 8*1024, 3584
	if testing.Short() {
		N, C = 3, 37
	}
	b := hardwareBackend(t, kernels.PrecisionBF16)
	alloc, allocBF := backendAllocs(t, b)
	r := rand.New(rand.NewPCG(28, 3585))
	f32 := randnIn(alloc, r)
	dh, rstd, x2, weight, dx0 := f32(N*C, 1), f32(N, 1), f32(N*C, 1), f32(C, 1), f32(N*C, 1)
	for i := range rstd {
		rstd[i] = 0.5 + rstd[i]*rstd[i]
	}
	wo := allocBF(C * C)
	fillNormalBF16(r, wo, 1)
	dx, wantDx, dxBF := alloc(N*C), alloc(N*C), allocBF(N*C)
	datt, wantDatt := alloc(N*C), alloc(N*C)
	plain := func() {
		b.Copy(wantDx, dx0, N*C)
		b.RMSNormBackward(wantDx, nil, dh, rstd, x2, weight, N, C)
		b.LinearBackwardBF16(wantDatt, wantDx, wo, N, C, C)
	}
	rounded := func() {
		b.Copy(dx, dx0, N*C)
		b.RMSNormBackwardRounded(dx, nil, dxBF, dh, rstd, x2, weight, N, C)
		b.LinearBackwardBF16Rounded(datt, dxBF, wo, N, C, C)
	}
	b.Zero(wantDatt, N*C)
	b.Zero(datt, N*C)
	plain()
	rounded()
	b.Synchronize()
	if !sameBits(dx, wantDx) {
		t.Fatal("RMSNormBackwardRounded's dinp differs from RMSNormBackward's")
	}
	want := make([]uint16, N*C)
	kernels.ToBF16(want, wantDx)
	if !slices.Equal(dxBF, want) {
		t.Fatal("RMSNormBackwardRounded's copy differs from kernels.ToBF16's")
	}
	if !sameBits(datt, wantDatt) {
		t.Fatal("the o projection's product on the copy differs from LinearBackwardBF16's")
	}
	// The down projection's product writing dact as bf16 on the copy
	// (the input norm's, for the block below): LinearBackwardBF16To's bits.
	I := 18944
	if testing.Short() {
		I = 41
	}
	wd := allocBF(C * I)
	fillNormalBF16(r, wd, 1)
	dact, wantDact := allocBF(N*I), allocBF(N*I)
	b.LinearBackwardBF16To(wantDact, wantDx, wd, N, I, C, 0)
	b.LinearBackwardBF16ToRounded(dact, dxBF, wd, N, I, C, 0)
	b.Synchronize()
	if !slices.Equal(dact, wantDact) {
		t.Fatal("the down projection's product on the copy differs from LinearBackwardBF16To's")
	}
	if testing.Short() {
		return
	}
	tp, tr := timePerCall(b, plain), timePerCall(b, rounded)
	t.Logf("NORMDOUT (N %d, C %d): RMSNormBackward + LinearBackwardBF16 %.0f µs, RMSNormBackwardRounded + LinearBackwardBF16Rounded %.0f µs: %.2fx",
		N, C, us(tp), us(tr), tp.Seconds()/tr.Seconds())
}

package cudafake_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hone-rl/hone/kernels/cuda/cudafake"
)

// TestRoundTF32: nearest with ties to even at TF32's 10 mantissa bits, on
// hand-picked values (ties both ways, a carry into the exponent, overflow,
// NaN, Inf, a subnormal), and on random values against the definition:
// the nearer of the two TF32 neighbours, the even one on a tie.
func TestRoundTF32(t *testing.T) {
	ulp := math.Ldexp(1, -10) // TF32's spacing in [1, 2)
	f := func(x float64) float32 { return float32(x) }
	for _, c := range []struct {
		in, want float32
	}{
		{1, 1},
		{f(1 + ulp/2), 1},              // tie, 1 is even
		{f(1 + 3*ulp/2), f(1 + 2*ulp)}, // tie, 1+ulp is odd: up
		{f(1 + ulp/2 + math.Ldexp(1, -23)), f(1 + ulp)},                      // just past the tie
		{f(1 + ulp/2 - math.Ldexp(1, -23)), 1},                               // just short of it
		{f(-1 - 3*ulp/2), f(-1 - 2*ulp)},                                     // sign-symmetric
		{f(2 - math.Ldexp(1, -23)), 2},                                       // carries into the exponent
		{1.0001, 1},                                                          // the usual example: TF32 reads 1
		{math.MaxFloat32, float32(math.Inf(1))},                              // past the largest TF32
		{float32(math.Inf(-1)), float32(math.Inf(-1))},                       //
		{math.Float32frombits(0x00001fff), math.Float32frombits(0x00002000)}, // subnormal, rounds up
		{0, 0},
	} {
		if got := cudafake.RoundTF32(c.in); math.Float32bits(got) != math.Float32bits(c.want) {
			t.Errorf("RoundTF32(%g [%#08x]) = %g [%#08x], want %g [%#08x]", c.in, math.Float32bits(c.in), got, math.Float32bits(got), c.want, math.Float32bits(c.want))
		}
	}
	if nan := cudafake.RoundTF32(math.Float32frombits(0x7f800001)); math.Float32bits(nan) != 0x7f800001 {
		t.Errorf("a NaN whose payload is in the low bits came back %#08x", math.Float32bits(nan))
	}
	r := rand.New(rand.NewPCG(77, 11))
	for range 100000 {
		x := math.Float32frombits(r.Uint32())
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) || math.Abs(float64(x)) > 3e38 {
			continue
		}
		got := cudafake.RoundTF32(x)
		lo := math.Float32frombits(math.Float32bits(x) &^ 0x1fff) // toward zero
		hi := math.Float32frombits(math.Float32bits(lo) + 0x2000) // away from zero
		dlo, dhi := math.Abs(float64(x)-float64(lo)), math.Abs(float64(hi)-float64(x))
		want := lo
		if dhi < dlo || (dhi == dlo && math.Float32bits(lo)&0x2000 != 0) {
			want = hi
		}
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("RoundTF32(%g [%#08x]) = %#08x, want %#08x", x, math.Float32bits(x), math.Float32bits(got), math.Float32bits(want))
		}
		if rel := math.Abs(float64(got)-float64(x)) / math.Abs(float64(x)); math.Abs(float64(x)) >= 0x1p-126 && rel > math.Ldexp(1, -11) { // normal numbers
			t.Fatalf("RoundTF32(%g): relative error %g past 2⁻¹¹", x, rel)
		}
	}
}

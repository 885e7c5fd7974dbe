package safetensors

import (
	"math"
	"math/rand/v2"
	"testing"
)

// f16Oracle decodes binary16 by the textbook formula, independent of F16ToF32's bit
// manipulation: (-1)^s · 2^(e-15) · (1 + m/1024) for normals, 2^-14 · m/1024 for
// subnormals.
func f16Oracle(h uint16) float64 {
	s := 1.0
	if h&0x8000 != 0 {
		s = -1
	}
	e := int(h>>10) & 0x1f
	m := float64(h & 0x3ff)
	switch e {
	case 0:
		return s * math.Ldexp(m/1024, -14)
	case 31:
		if m == 0 {
			return s * math.Inf(1)
		}
		return math.NaN()
	}
	return s * math.Ldexp(1+m/1024, e-15)
}

func TestF16KnownBitPatterns(t *testing.T) {
	cases := []struct {
		h    uint16
		want float32
	}{
		{0x0000, 0},
		{0x3c00, 1},
		{0xc000, -2},
		{0x3555, 0.333251953125},
		{0x7bff, 65504},
		{0xfbff, -65504},
		{0x0400, float32(math.Ldexp(1, -14))},    // smallest normal
		{0x03ff, float32(math.Ldexp(1023, -24))}, // largest subnormal
		{0x0001, float32(math.Ldexp(1, -24))},    // smallest subnormal
		{0x8001, -float32(math.Ldexp(1, -24))},   // negative subnormal
		{0x0200, float32(math.Ldexp(1, -15))},    // mid subnormal
		{0x3bff, 0.99951171875},                  // largest below one
		{0x7c00, float32(math.Inf(1))},           // +Inf
		{0xfc00, float32(math.Inf(-1))},          // -Inf
		{0x4248, 3.140625},                       // pi in half
		{0x5640, 100},
	}
	for _, c := range cases {
		if got := F16ToF32(c.h); got != c.want {
			t.Errorf("F16ToF32(%#04x) = %g, want %g", c.h, got, c.want)
		}
	}
	if got := F16ToF32(0x8000); got != 0 || !math.Signbit(float64(got)) {
		t.Errorf("F16ToF32(0x8000) = %g, want -0", got)
	}
	for _, h := range []uint16{0x7e00, 0x7c01, 0xfe00, 0x7fff} {
		if got := F16ToF32(h); !math.IsNaN(float64(got)) {
			t.Errorf("F16ToF32(%#04x) = %g, want NaN", h, got)
		}
	}
}

func TestF16AllPatterns(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		got := F16ToF32(h)
		want := f16Oracle(h)
		if math.IsNaN(want) {
			if !math.IsNaN(float64(got)) {
				t.Fatalf("F16ToF32(%#04x) = %g, want NaN", h, got)
			}
			if back := F32ToF16(got); back&0x7c00 != 0x7c00 || back&0x3ff == 0 {
				t.Fatalf("F32ToF16(NaN from %#04x) = %#04x, not a NaN", h, back)
			}
			continue
		}
		if float64(got) != want || math.Signbit(float64(got)) != (h&0x8000 != 0) {
			t.Fatalf("F16ToF32(%#04x) = %g, want %g", h, got, want)
		}
		if back := F32ToF16(got); back != h {
			t.Fatalf("F32ToF16(F16ToF32(%#04x)) = %#04x", h, back)
		}
	}
}

func TestF32ToF16Rounding(t *testing.T) {
	cases := []struct {
		f    float32
		want uint16
	}{
		{1 + 1.0/2048, 0x3c00},             // tie, rounds to even (down)
		{1 + 3.0/2048, 0x3c02},             // tie, rounds to even (up)
		{1 + 1.0/2048 + 1.0/65536, 0x3c01}, // just above the tie
		{65504, 0x7bff},
		{65519.99, 0x7bff},
		{65520, 0x7c00}, // tie between max and the next step: even is Inf
		{1e10, 0x7c00},
		{-1e10, 0xfc00},
		{float32(math.Ldexp(1, -25)), 0x0000},      // half the smallest subnormal: tie to even 0
		{float32(math.Ldexp(1.0001, -25)), 0x0001}, // just above: rounds up
		{float32(math.Ldexp(3, -25)), 0x0002},      // 1.5 subnormal steps: tie to even 2
		{float32(math.Ldexp(1, -26)), 0x0000},
		{float32(math.Ldexp(2047, -25)), 0x0400}, // rounds up into the smallest normal
		{1e-30, 0x0000},
		{-1e-30, 0x8000},
	}
	for _, c := range cases {
		if got := F32ToF16(c.f); got != c.want {
			t.Errorf("F32ToF16(%g) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
}

// TestF32ToF16Nearest checks the rounding property on random inputs: the chosen half
// is at least as close as both neighbours, and on a tie it is the even one.
func TestF32ToF16Nearest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		f := math.Float32frombits(r.Uint32())
		if math.IsNaN(float64(f)) || math.Abs(float64(f)) >= 65520 {
			continue
		}
		h := F32ToF16(f)
		d := math.Abs(float64(f) - float64(F16ToF32(h)))
		for _, nb := range []uint16{h + 1, h - 1} {
			if nb&0x7fff >= 0x7c00 || (h&0x7fff == 0 && nb&0x7fff == 0x7fff) {
				continue
			}
			dn := math.Abs(float64(f) - float64(F16ToF32(nb)))
			if dn < d || (dn == d && h&1 == 1) {
				t.Fatalf("F32ToF16(%g) = %#04x (err %g) but %#04x has err %g", f, h, d, nb, dn)
			}
		}
	}
}

func TestBF16(t *testing.T) {
	if got := BF16ToF32(0x3f80); got != 1 {
		t.Errorf("BF16ToF32(0x3f80) = %g", got)
	}
	if got := BF16ToF32(0xc049); got != -3.140625 {
		t.Errorf("BF16ToF32(0xc049) = %g", got)
	}
	cases := []struct {
		bits uint32
		want uint16
	}{
		{0x3f808000, 0x3f80}, // tie to even, down
		{0x3f818000, 0x3f82}, // tie to even, up
		{0x3f808001, 0x3f81},
		{0x7f7fffff, 0x7f80}, // max float rounds to Inf
		{0x7f800000, 0x7f80},
		{0x00000001, 0x0000}, // tiny subnormal
		{0x80000000, 0x8000},
	}
	for _, c := range cases {
		if got := F32ToBF16(math.Float32frombits(c.bits)); got != c.want {
			t.Errorf("F32ToBF16(%#08x) = %#04x, want %#04x", c.bits, got, c.want)
		}
	}
	if got := F32ToBF16(float32(math.NaN())); got&0x7f80 != 0x7f80 || got&0x7f == 0 {
		t.Errorf("F32ToBF16(NaN) = %#04x, not a NaN", got)
	}
	// NaN whose payload lives only in the low 16 bits must not become Inf.
	if got := F32ToBF16(math.Float32frombits(0x7f800001)); got&0x7f == 0 {
		t.Errorf("F32ToBF16(0x7f800001) = %#04x, lost the NaN", got)
	}
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := BF16ToF32(h)
		if math.IsNaN(float64(f)) {
			continue
		}
		if back := F32ToBF16(f); back != h {
			t.Fatalf("F32ToBF16(BF16ToF32(%#04x)) = %#04x", h, back)
		}
	}
}

func benchConvert(b *testing.B, d DType) {
	const n = 1 << 20
	// Weight-like values: normal numbers of magnitude around 0.02.
	r := rand.New(rand.NewPCG(3, 4))
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = float32(r.NormFloat64() * 0.02)
	}
	src, err := FromFloat32(d, vals)
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]float32, n)
	b.SetBytes(int64(len(src)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := ToFloat32(dst, d, src); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkToFloat32BF16(b *testing.B) { benchConvert(b, BF16) }
func BenchmarkToFloat32F16(b *testing.B)  { benchConvert(b, F16) }
func BenchmarkToFloat32F32(b *testing.B)  { benchConvert(b, F32) }

// TestToFloat32F16Bulk checks the inline fast path of ToFloat32 against F16ToF32 on
// every bit pattern.
func TestToFloat32F16Bulk(t *testing.T) {
	src := make([]byte, 2<<16)
	for i := 0; i < 1<<16; i++ {
		src[2*i], src[2*i+1] = byte(i), byte(i>>8)
	}
	dst := make([]float32, 1<<16)
	if err := ToFloat32(dst, F16, src); err != nil {
		t.Fatal(err)
	}
	for i, v := range dst {
		want := F16ToF32(uint16(i))
		if math.Float32bits(v) != math.Float32bits(want) {
			t.Fatalf("pattern %#04x: bulk %g, single %g", i, v, want)
		}
	}
}

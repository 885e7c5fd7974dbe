package kernels

import (
	"math"
	"testing"
)

func TestBF16RoundTrip(t *testing.T) {
	for _, c := range []struct {
		in   float32
		want uint16
	}{
		{1, 0x3f80},
		{-2, 0xc000},
		{0, 0},
		{float32(math.Inf(1)), 0x7f80},
		{math.Float32frombits(0x3f808000), 0x3f80}, // tie → even (down)
		{math.Float32frombits(0x3f818000), 0x3f82}, // tie → even (up)
		{math.Float32frombits(0x3f808001), 0x3f81}, // above half → up
	} {
		if got := BF16(c.in); got != c.want {
			t.Errorf("BF16(%g) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	if f := F32(BF16(float32(math.NaN()))); !math.IsNaN(float64(f)) {
		t.Errorf("NaN became %g", f)
	}
	if f := F32(0x3fc0); f != 1.5 {
		t.Errorf("F32(0x3fc0) = %g, want 1.5", f)
	}
}

func TestRoPEInvFreqErrors(t *testing.T) {
	for _, c := range []RoPEConfig{
		{Theta: 1e4, HeadDim: 0},
		{Theta: 1e4, HeadDim: 8, RotaryDim: 5},
		{Theta: 1e4, HeadDim: 8, RotaryDim: 10},
		{Theta: 0, HeadDim: 8},
		{Theta: 1e4, HeadDim: 8, Scaling: "yarn"},
		{Theta: 1e4, HeadDim: 8, Scaling: "llama3", Factor: 8, LowFreqFactor: 4, HighFreqFactor: 1, OriginalMaxPos: 8192},
	} {
		if _, err := RoPEInvFreq(c); err == nil {
			t.Errorf("RoPEInvFreq(%+v): no error", c)
		}
	}
}

func TestRoPEInvFreqLlama3Bands(t *testing.T) {
	// Llama 3.1: θ=500000, D=128, factor 8, bands 1..4 over 8192 positions.
	base, err := RoPEInvFreq(RoPEConfig{Theta: 500000, HeadDim: 128})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := RoPEInvFreq(RoPEConfig{Theta: 500000, HeadDim: 128, Scaling: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPos: 8192})
	if err != nil {
		t.Fatal(err)
	}
	for i := range base {
		wl := 2 * math.Pi / float64(base[i])
		ratio := float64(sc[i]) / float64(base[i])
		switch {
		case wl < 8192/4 && ratio != 1:
			t.Errorf("pair %d (wavelength %.0f): high frequency scaled by %g", i, wl, ratio)
		case wl > 8192 && math.Abs(ratio-1.0/8) > 1e-6:
			t.Errorf("pair %d (wavelength %.0f): low frequency scaled by %g, want 1/8", i, wl, ratio)
		case ratio < 1.0/8-1e-6 || ratio > 1+1e-6:
			t.Errorf("pair %d: ratio %g outside [1/8, 1]", i, ratio)
		}
	}
}

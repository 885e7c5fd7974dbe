package model

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/safetensors"
	"github.com/hone-rl/hone/kernels"
)

// firstNonFiniteBF16Slow is firstNonFiniteBF16 one value at a time.
func firstNonFiniteBF16Slow(b []byte) int {
	for i := 0; i+1 < len(b); i += 2 {
		if math.IsNaN(float64(kernels.F32(binary.LittleEndian.Uint16(b[i:])))) || math.IsInf(float64(kernels.F32(binary.LittleEndian.Uint16(b[i:]))), 0) {
			return i / 2
		}
	}
	return -1
}

// TestFirstNonFiniteBF16: the word-at-a-time scan finds the first NaN or
// infinity wherever it sits (in a word, across the 16-value steps, in the
// tail), of either sign and any payload, and passes the largest finite
// values and subnormals; random contents agree with the value-at-a-time
// scan.
func TestFirstNonFiniteBF16(t *testing.T) {
	finite := []uint16{0x0000, 0x8000, 0x0001, 0x807f, 0x7f7f, 0xff7f, 0x3f80, 0x7f00, 0x00ff}
	bad := []uint16{0x7f80, 0xff80, 0x7fc0, 0xffc1, 0x7f81, 0x7fff}
	put := func(vals []uint16) []byte {
		b := make([]byte, 2*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint16(b[2*i:], v)
		}
		return b
	}
	for _, n := range []int{0, 1, 15, 16, 17, 33, 100} {
		vals := make([]uint16, n)
		for i := range vals {
			vals[i] = finite[i%len(finite)]
		}
		if got := firstNonFiniteBF16(put(vals)); got != -1 {
			t.Fatalf("n=%d, all finite: got %d", n, got)
		}
		for p := range n {
			for _, v := range bad {
				w := append([]uint16(nil), vals...)
				w[p] = v
				if p+3 < n {
					w[p+3] = bad[0] // a later one must not be reported
				}
				if got := firstNonFiniteBF16(put(w)); got != p {
					t.Fatalf("n=%d, %#04x at %d: got %d", n, v, p, got)
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, r.IntN(200))
		for i := range b {
			b[i] = byte(r.Uint32())
			if r.IntN(4) > 0 && i%2 == 1 {
				b[i] &^= 0x40 // mostly finite: clear an exponent bit
			}
		}
		if got, want := firstNonFiniteBF16(b), firstNonFiniteBF16Slow(b); got != want {
			t.Fatalf("% x: got %d, want %d", b, got, want)
		}
	}
}

// TestLoadRefusesNonFinite: a checkpoint whose weight holds a NaN or an
// infinity is refused at load, held as float32 or as bfloat16 and stored
// as any of the three dtypes, with the tensor and the element named; the
// same checkpoint with the value finite loads.
func TestLoadRefusesNonFinite(t *testing.T) {
	be := testBackends(t)[0]
	src := filepath.Join(goldenDir, "llama", "model")
	m, err := Load(src, be)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	const target = "model.layers.1.mlp.up_proj.weight"
	write := func(t *testing.T, d safetensors.DType, bad float32) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
			t.Fatal(err)
		}
		var ts []safetensors.Tensor
		for _, tn := range m.Tensors() {
			vals := tn.Values
			if tn.Name == target {
				vals = append([]float32(nil), vals...)
				vals[tn.Shape[1]+5] = bad // row 1, column 5
			}
			st, err := safetensors.FromFloat32Tensor(tn.Name, d, tn.Shape, vals)
			if err != nil {
				t.Fatal(err)
			}
			ts = append(ts, st)
		}
		if err := safetensors.Write(filepath.Join(dir, "model.safetensors"), ts, nil); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	nan := float32(math.NaN())
	for _, d := range []safetensors.DType{safetensors.F32, safetensors.F16, safetensors.BF16} {
		for _, dt := range []WeightDType{DTypeFloat32, DTypeBFloat16} {
			for _, bad := range []float32{nan, float32(math.Inf(1)), float32(math.Inf(-1))} {
				dir := write(t, d, bad)
				_, err := LoadAs(dir, be, dt)
				if err == nil {
					t.Fatalf("%s on disk, held as %v, %v: loaded", d, dt, bad)
				}
				if d == safetensors.BF16 && dt == DTypeBFloat16 && bad != bad {
					t.Log(err)
				}
				for _, want := range []string{target, "element", "[1 5]", dir} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("%s, %v, %v: error %q does not name %q", d, dt, bad, err, want)
					}
				}
			}
			if _, err := LoadAs(write(t, d, 0.5), be, dt); err != nil {
				t.Errorf("%s, %v, finite: %v", d, dt, err)
			}
		}
	}
}

package model

import (
	"bytes"
	"math"
	"slices"
	"sort"
	"testing"
	"unsafe"

	"github.com/hone-rl/hone/format/safetensors"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/ref"
)

// checkSlab checks that every weight matrix has exactly its own elements
// (len = cap = size, so no write or append can reach a neighbour), that no
// two overlap, that all share the model's one precision, and that a tied
// lm_head is the embedding.
func checkSlab(t *testing.T, m *Model, bf16 bool) {
	t.Helper()
	type span struct{ lo, hi uintptr }
	var spans []span
	m.eachMatrix(func(w *Matrix, n int) {
		var p unsafe.Pointer
		var bytes, l, c int
		switch {
		case bf16 && w.BF16 != nil && w.F32 == nil:
			p, l, c, bytes = unsafe.Pointer(&w.BF16[0]), len(w.BF16), cap(w.BF16), 2*n
		case !bf16 && w.F32 != nil && w.BF16 == nil:
			p, l, c, bytes = unsafe.Pointer(&w.F32[0]), len(w.F32), cap(w.F32), 4*n
		default:
			t.Fatalf("matrix of %d elements: F32 %d, BF16 %d values; want only %s", n, len(w.F32), len(w.BF16), map[bool]string{true: "BF16", false: "F32"}[bf16])
		}
		if l != n || c != n {
			t.Errorf("matrix of %d elements has len %d, cap %d", n, l, c)
		}
		spans = append(spans, span{uintptr(p), uintptr(p) + uintptr(bytes)})
	})
	sort.Slice(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
	for i := 1; i < len(spans); i++ {
		if spans[i].lo < spans[i-1].hi {
			t.Errorf("matrices overlap: [%#x, %#x) and [%#x, %#x)", spans[i-1].lo, spans[i-1].hi, spans[i].lo, spans[i].hi)
		}
	}
	if m.Config.TieEmbeddings {
		same := func(a, b Matrix) bool {
			if bf16 {
				return &a.BF16[0] == &b.BF16[0] && len(a.BF16) == len(b.BF16)
			}
			return &a.F32[0] == &b.F32[0] && len(a.F32) == len(b.F32)
		}
		if !same(m.Head, m.Embed) {
			t.Error("tied lm_head is not the embedding")
		}
	}
}

// TestWeightSlab checks the layout allocMatrices gives, before and after
// ToBF16, tied and untied, and that ToBF16 keeps the values (rounded) and
// does nothing the second time.
func TestWeightSlab(t *testing.T) {
	for _, tie := range []bool{false, true} {
		c := microConfig("llama")
		c.TieEmbeddings = tie
		m, err := New(c, ref.New())
		if err != nil {
			t.Fatal(err)
		}
		randomize(m, 5)
		checkSlab(t, m, false)
		want := m.Blocks[1].MLP.Down.Weight.F32[7]
		m.ToBF16()
		checkSlab(t, m, true)
		f, _, err := m.Blocks[1].MLP.Down.Weight.float32s(m.be)
		if err != nil {
			t.Fatal(err)
		}
		got := f[7]
		if d := got - want; d > 1e-2*abs32(want) || -d > 1e-2*abs32(want) {
			t.Errorf("tie=%v: a weight became %v in bf16, want about %v", tie, got, want)
		}
		before := &m.Embed.BF16[0]
		m.ToBF16()
		if &m.Embed.BF16[0] != before {
			t.Errorf("tie=%v: a second ToBF16 reallocated the weights", tie)
		}
	}
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}

// TestLoadBF16Chunked: converting a tensor into bfloat16 a few elements at
// a time (the chunk not dividing the length) gives the bits that rounding
// the whole float32 tensor gives, from each dtype on disk, written in
// place or through a kernels.HostUploader's uploads.
func TestLoadBF16Chunked(t *testing.T) {
	vals := make([]float32, 1001)
	for i := range vals {
		vals[i] = float32(math.Sin(float64(i)*0.37)) * float32(1+i%17) * 1e-2
	}
	for _, d := range []safetensors.DType{safetensors.F32, safetensors.F16, safetensors.BF16} {
		tn, err := safetensors.FromFloat32Tensor("w", d, []int{7, 143}, vals)
		if err != nil {
			t.Fatal(err)
		}
		var file bytes.Buffer
		if err := safetensors.Encode(&file, []safetensors.Tensor{tn}, nil); err != nil {
			t.Fatal(err)
		}
		src, err := safetensors.ReadBytes(file.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		whole, err := src.Float32("w")
		if err != nil {
			t.Fatal(err)
		}
		want := make([]uint16, len(vals))
		kernels.ToBF16(want, whole)
		got := make([]uint16, len(vals))
		if i, err := loadBF16(ref.New(), got, src, "w", d, make([]float32, 64)); err != nil || i >= 0 {
			t.Fatalf("%s: non-finite at %d, %v", d, i, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: chunked bits differ from whole-tensor rounding", d)
		}
		if _, err := loadBF16(ref.New(), got[:1000], src, "w", d, make([]float32, 64)); err == nil {
			t.Errorf("%s: a destination of the wrong size was accepted", d)
		}
		// Onto a kernels.HostUploader: the same bits through its uploads,
		// a bfloat16 tensor in one (from the file's bytes, or a chunk at a
		// time where they lie at an odd address), others a chunk at a time.
		for _, odd := range []bool{false, true} {
			up := &uploads{Backend: ref.New()}
			var s TensorSource = src
			if odd {
				s = oddBytes{src}
			}
			got := make([]uint16, len(vals))
			if i, err := loadBF16(up, got, s, "w", d, make([]float32, 64)); err != nil || i >= 0 {
				t.Fatalf("%s onto an uploader (odd address %v): non-finite at %d, %v", d, odd, i, err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s onto an uploader (odd address %v): the bits differ", d, odd)
			}
			wantCalls := (len(vals) + 63) / 64
			if d == safetensors.BF16 && !odd {
				wantCalls = 1
			}
			if up.calls != wantCalls {
				t.Errorf("%s onto an uploader (odd address %v): %d uploads, want %d", d, odd, up.calls, wantCalls)
			}
		}
	}
}

// uploads is a host backend that says it is a kernels.HostUploader and
// counts the uploads.
type uploads struct {
	kernels.Backend
	calls int
}

func (u *uploads) UploadBF16(dst, src []uint16) {
	kernels.Need("UploadBF16", "src", len(src), len(dst))
	u.calls++
	copy(dst, src)
}

// oddBytes is a TensorSource whose tensors' bytes lie at odd addresses.
type oddBytes struct{ TensorSource }

func (o oddBytes) Bytes(name string) ([]byte, error) {
	b, err := o.TensorSource.Bytes(name)
	if err != nil {
		return nil, err
	}
	c := make([]byte, len(b)+1)
	if uintptr(unsafe.Pointer(&c[0]))%2 == 1 {
		c = c[:len(b)]
	} else {
		c = c[1:]
	}
	copy(c, b)
	return c, nil
}

package safetensors

import (
	"path/filepath"
	"testing"
)

// BenchmarkOpenConvert maps a file with one 32 MiB bf16 tensor afresh each
// iteration (page cache warm, page tables cold, as when a model loads) and converts
// it to float32: the cost of loading a weight, page faults included.
func BenchmarkOpenConvert(b *testing.B) {
	const n = 4096 * 4096
	p := filepath.Join(b.TempDir(), "w.safetensors")
	if err := Write(p, []Tensor{{Name: "w", DType: BF16, Shape: []int{4096, 4096}, Data: make([]byte, 2*n)}}, nil); err != nil {
		b.Fatal(err)
	}
	dst := make([]float32, n)
	for i := range dst {
		dst[i] = 1 // fault the destination in once, outside the loop
	}
	b.SetBytes(2 * n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, err := OpenFile(p)
		if err != nil {
			b.Fatal(err)
		}
		if err := f.Float32Into(dst, "w"); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

package peft

import (
	"fmt"

	"github.com/hone-rl/hone/format/safetensors"
)

// A NaN or infinite LoRA weight turns every logit it touches into NaN: a
// server would answer with empty text, and a trainer resuming from such
// an adapter (a diverged step) trains NaN from its first step. Read
// refuses it; CheckWeightsFile checks a weights file without keeping its
// values, for a caller that hands the file to another program (vLLM).

// CheckWeightsFile fails when a tensor of the safetensors file at path (F32,
// F16 or BF16; other dtypes are not looked at) holds a NaN or infinite
// value (the error matches safetensors.ErrNonFinite). It converts one
// chunk at a time, so memory stays small for any file size.
func CheckWeightsFile(path string) error {
	f, err := safetensors.OpenFile(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]float32, 1<<14)
	for _, name := range f.Names() {
		info, _ := f.Info(name)
		switch info.DType {
		case safetensors.F32, safetensors.F16, safetensors.BF16:
		default:
			continue
		}
		b, err := f.Bytes(name)
		if err != nil {
			return err
		}
		size := info.DType.Size()
		for off := 0; off < len(b); off += len(buf) * size {
			chunk := b[off:min(off+len(buf)*size, len(b))]
			vals := buf[:len(chunk)/size]
			if err := safetensors.ToFloat32(vals, info.DType, chunk); err != nil {
				return fmt.Errorf("%s: tensor %q: %w", path, name, err)
			}
			if err := safetensors.CheckFinite(name, vals, off/size); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		}
	}
	return nil
}

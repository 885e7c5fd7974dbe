package adapters

import (
	"fmt"

	"github.com/hone-rl/hone/format/safetensors"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/train/model"
)

// A NaN or infinite LoRA weight turns every logit it touches into NaN: the
// sampler then produces empty answers, logprobs cannot be encoded and streams
// end without a finish reason. Such an adapter (a diverged training step) is
// refused at load, so the previous step keeps serving.

// checkFinite fails when a loaded adapter holds a NaN or infinite weight.
func checkFinite(ad *model.Adapter) error {
	for layer, mods := range ad.Layers {
		for m, l := range mods {
			if l == nil {
				continue
			}
			for _, t := range []struct {
				which string
				vals  []float32
			}{{"lora_A", l.A}, {"lora_B", l.B}} {
				if i := kernels.FirstNonFinite(t.vals); i >= 0 {
					return fmt.Errorf("layer %d %s %s holds %v at element %d; the training step diverged, so this adapter is not served", layer, model.Module(m), t.which, t.vals[i], i)
				}
			}
		}
	}
	return nil
}

// CheckWeightsFile fails when a tensor of the safetensors file at path (F32,
// F16 or BF16; other dtypes are not looked at) holds a NaN or infinite value.
// It converts one chunk at a time, so memory stays small for any file size.
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
			if i := kernels.FirstNonFinite(vals); i >= 0 {
				return fmt.Errorf("%s: tensor %q holds %v at element %d; the training step diverged, so this adapter is not served", path, name, vals[i], off/size+i)
			}
		}
	}
	return nil
}

package peft

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/safetensors"
)

// TestReadRefusesNonFinite: an adapter whose file holds a NaN or an
// infinity (a diverged training step) is refused by Read, naming the
// weights file, the tensor and the first bad element, in every float
// dtype. Before, Read returned it, and a trainer resuming from it trained
// NaN from its first step without a word.
func TestReadRefusesNonFinite(t *testing.T) {
	m := tinyConfig(t)
	for _, tc := range []struct {
		dtype safetensors.DType
		bad   float32
		want  string
	}{
		{safetensors.F32, float32(math.NaN()), "NaN at element 3"},
		{safetensors.F16, float32(math.Inf(-1)), "-Inf at element 3"},
		{safetensors.BF16, float32(math.Inf(1)), "+Inf at element 3"},
	} {
		a := randomAdapter(t, m, 2, 4, false, 7)
		a.DType = tc.dtype
		a.Tensors[1]["v_proj"].B[5] = 0.5 // a finite value before the bad one is passed over
		a.Tensors[1]["v_proj"].B[3] = tc.bad
		dir := filepath.Join(t.TempDir(), "ad")
		if err := Write(dir, a); err != nil {
			t.Fatal(err)
		}
		_, err := Read(dir)
		wpath := filepath.Join(dir, WeightsName)
		tensor := `"base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight"`
		if err == nil || !strings.Contains(err.Error(), wpath) || !strings.Contains(err.Error(), tensor) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Read = %v; want it to name %s, tensor %s and %q", tc.dtype, err, wpath, tensor, tc.want)
		}
	}
}

// TestCheckWeightsFile: the file check hone-serve uses before pushing to vLLM finds a
// non-finite value in each float dtype, past the first chunk too, and
// passes finite files and integer tensors.
func TestCheckWeightsFile(t *testing.T) {
	dir := t.TempDir()
	big := make([]float32, 40000)
	for i := range big {
		big[i] = float32(i%7) - 3
	}
	for _, tc := range []struct {
		dtype safetensors.DType
		bad   float32
		at    int
		want  string
	}{
		{safetensors.F32, float32(math.NaN()), 39999, "NaN at element 39999"},
		{safetensors.F16, float32(math.Inf(-1)), 20000, "-Inf at element 20000"},
		{safetensors.BF16, float32(math.Inf(1)), 16384, "+Inf at element 16384"},
		{safetensors.F16, 1e6, 3, "+Inf at element 3"}, // beyond f16's range: stored as +Inf
	} {
		vals := slices.Clone(big)
		vals[tc.at] = tc.bad
		good, err := safetensors.FromFloat32Tensor("good", tc.dtype, []int{4}, []float32{1, 2, 3, 4})
		if err != nil {
			t.Fatal(err)
		}
		bad, err := safetensors.FromFloat32Tensor("w", tc.dtype, []int{200, 200}, vals)
		if err != nil {
			t.Fatal(err)
		}
		ints := safetensors.Tensor{Name: "ids", DType: safetensors.I32, Shape: []int{1}, Data: []byte{0xff, 0xff, 0x80, 0x7f}}
		p := filepath.Join(dir, string(tc.dtype)+fmt.Sprint(tc.at)+".safetensors")
		if err := safetensors.Write(p, []safetensors.Tensor{good, ints}, nil); err != nil {
			t.Fatal(err)
		}
		if err := CheckWeightsFile(p); err != nil {
			t.Fatalf("%s finite file: %v", tc.dtype, err)
		}
		os.Remove(p)
		if err := safetensors.Write(p, []safetensors.Tensor{good, bad, ints}, nil); err != nil {
			t.Fatal(err)
		}
		err = CheckWeightsFile(p)
		if err == nil || !strings.Contains(err.Error(), `tensor "w" holds `+tc.want) {
			t.Errorf("%s: %v; want it to name %q", tc.dtype, err, tc.want)
		}
	}
}

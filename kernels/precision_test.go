package kernels_test

import (
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/ref"
)

func TestParsePrecision(t *testing.T) {
	for in, want := range map[string]kernels.Precision{"f32": kernels.PrecisionF32, "float32": kernels.PrecisionF32, "bf16": kernels.PrecisionBF16, "bfloat16": kernels.PrecisionBF16} {
		got, err := kernels.ParsePrecision(in)
		if err != nil || got != want {
			t.Errorf("ParsePrecision(%q) = %v, %v; want %v", in, got, err, want)
		}
		if back, _ := kernels.ParsePrecision(got.String()); back != got {
			t.Errorf("%v does not parse back from its String %q", got, got.String())
		}
	}
	if _, err := kernels.ParsePrecision("fp8"); err == nil {
		t.Error("ParsePrecision(fp8): no error")
	}
	if p := kernels.PrecisionOf(ref.New()); p != kernels.PrecisionF32 {
		t.Errorf("ref computes in %v, want f32", p)
	}
	if same, loose := kernels.PrecisionBF16.Tolerance(); same != kernels.F32Tol || loose <= same {
		t.Errorf("bf16 tolerance class (%g, %g): want F32Tol against the same rounded inputs and a looser bound against f32", same, loose)
	}
}

package trainer

import (
	"strings"
	"testing"
)

// TestAdamWFlagsRefusedAsTorchRefuses: the optimizer values
// torch.optim.AdamW refuses are usage errors naming the flag, before
// anything is trained (a β of 1 made the first update NaN, and the run
// failed after loading the model, blaming --lr and the rewards); the
// edges torch takes (β 0, ε 0, no decay) are taken.
func TestAdamWFlagsRefusedAsTorchRefuses(t *testing.T) {
	for _, tc := range []struct {
		flag string
		set  func(o *Options)
	}{
		{"--adam-beta1", func(o *Options) { o.Beta1 = 1 }},
		{"--adam-beta1", func(o *Options) { o.Beta1 = -0.1 }},
		{"--adam-beta2", func(o *Options) { o.Beta2 = 1 }},
		{"--adam-beta2", func(o *Options) { o.Beta2 = 1.5 }},
		{"--adam-eps", func(o *Options) { o.AdamEps = -1e-8 }},
		{"--weight-decay", func(o *Options) { o.WeightDecay = -0.1 }},
	} {
		o := defaultOptions()
		o.Model, o.Name = "m", "r"
		tc.set(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("β1 %v β2 %v ε %v decay %v: %v, want an error naming %s", o.Beta1, o.Beta2, o.AdamEps, o.WeightDecay, err, tc.flag)
		}
	}
	o := defaultOptions()
	o.Model, o.Name = "m", "r"
	o.Beta1, o.Beta2, o.AdamEps, o.WeightDecay = 0, 0, 0, 0
	if err := o.Validate(); err != nil {
		t.Errorf("β 0, ε 0, no decay: %v", err)
	}
}

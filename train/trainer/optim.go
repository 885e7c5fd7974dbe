package trainer

import (
	"fmt"
	"math"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/train/checkpoint"
	"github.com/hone-rl/hone/train/model"
)

// AdamW is the optimizer over an adapter's LoRA tensors: global grad-norm
// clipping, then the backend's AdamW step on each tensor.
type AdamW struct {
	Params      kernels.AdamWParams // LR is overwritten from the schedule each update
	MaxGradNorm float64             // ≤ 0: no clipping
	Step        int                 // updates done

	names []string
	m, v  [][]float32
}

// NewAdamW returns an optimizer with zero moments for ad's tensors.
func NewAdamW(ad *model.Adapter, p kernels.AdamWParams, maxGradNorm float64) *AdamW {
	o := &AdamW{Params: p, MaxGradNorm: maxGradNorm}
	ad.Params(func(name string, param, _ []float32) {
		o.names = append(o.names, name)
		o.m = append(o.m, make([]float32, len(param)))
		o.v = append(o.v, make([]float32, len(param)))
	})
	return o
}

// GradNorm returns the global L2 norm of the adapter's gradient, summed in
// float64 in Params order (deterministic).
func GradNorm(ad *model.Adapter) float64 {
	s := 0.0
	ad.Params(func(_ string, _, g []float32) {
		for _, x := range g {
			s += float64(x) * float64(x)
		}
	})
	return math.Sqrt(s)
}

// Update clips the gradient to MaxGradNorm, takes one AdamW step at rate lr
// and returns the norm before clipping. The norm is computed even without
// clipping: a NaN or Inf anywhere in the gradient makes it non-finite, and
// then nothing is updated. After the step every weight is checked too, since
// a huge lr overflows weights to Inf from a finite gradient; on either
// failure the error matches ErrNotFinite and Step is not advanced.
func (o *AdamW) Update(be kernels.Backend, ad *model.Adapter, lr float64) (float64, error) {
	norm := GradNorm(ad)
	if !isFinite(norm) {
		return norm, &notFinite{what: "gradient", detail: fmt.Sprintf("its norm is %v", norm)}
	}
	if o.MaxGradNorm > 0 && norm > o.MaxGradNorm {
		s := float32(o.MaxGradNorm / (norm + 1e-6))
		ad.Params(func(_ string, _, g []float32) { be.Scale(g, g, s, len(g)) })
	}
	step := o.Step + 1
	p := o.Params
	p.LR = float32(lr)
	i := 0
	ad.Params(func(_ string, param, g []float32) {
		be.AdamW(param, g, o.m[i], o.v[i], len(param), step, p)
		i++
	})
	if err := checkWeights(ad); err != nil {
		return norm, err
	}
	o.Step = step
	return norm, nil
}

// checkWeights returns a notFinite error naming the first LoRA tensor that
// holds a NaN or Inf.
func checkWeights(ad *model.Adapter) error {
	var err error
	ad.Params(func(name string, param, _ []float32) {
		if err != nil {
			return
		}
		for _, x := range param {
			if v := float64(x); !isFinite(v) {
				err = &notFinite{what: "updated weights", detail: fmt.Sprintf("%s holds %v", name, v)}
				return
			}
		}
	})
	return err
}

func isFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Tensors returns the moments under "<param>.exp_avg" / "<param>.exp_avg_sq"
// (aliasing the optimizer's memory), for saving and loading.
func (o *AdamW) Tensors() []checkpoint.Tensor {
	var ts []checkpoint.Tensor
	for i, n := range o.names {
		ts = append(ts, checkpoint.Tensor{Name: n + ".exp_avg", Values: o.m[i]}, checkpoint.Tensor{Name: n + ".exp_avg_sq", Values: o.v[i]})
	}
	return ts
}

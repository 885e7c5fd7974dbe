package trainer

import (
	"fmt"
	"math"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/train/checkpoint"
	"github.com/hone-rl/hone/train/model"
)

// AdamW is the optimizer over an adapter's LoRA tensors: global grad-norm
// clipping, then the backend's AdamW step on each tensor. Its moments live
// where the adapter's tensors do (Adapter.Place); Free releases them. On
// an adapter placed on a backend that allocates (Adapter.Flat), the
// moments are one allocation each, in the same order, and the clip and the
// step run once over all the tensors rather than once a tensor (on
// kernels/cuda one launch each instead of 392 on the 7B shape): the same
// values, the ops being elementwise.
type AdamW struct {
	Params      kernels.AdamWParams // LR is overwritten from the schedule each update
	MaxGradNorm float64             // ≤ 0: no clipping
	Step        int                 // updates done

	be    kernels.Backend // the adapter's at construction (nil: Go memory)
	names []string
	m, v  [][]float32
	// flatM, flatV: the moments' allocations when the adapter is Flat
	// (m and v are views of them), else nil.
	flatM, flatV []float32
}

// NewAdamW returns an optimizer with zero moments for ad's tensors,
// allocated on the backend ad was placed on.
func NewAdamW(ad *model.Adapter, p kernels.AdamWParams, maxGradNorm float64) (*AdamW, error) {
	o := &AdamW{Params: p, MaxGradNorm: maxGradNorm, be: ad.Backend()}
	alloc := func(n int) ([]float32, error) {
		if o.be == nil {
			return make([]float32, n), nil
		}
		return kernels.AllocF32(o.be, n)
	}
	var err error
	if params, _ := ad.Flat(); params != nil {
		if o.flatM, err = alloc(len(params)); err == nil {
			if o.flatV, err = alloc(len(params)); err != nil {
				kernels.FreeF32(o.be, o.flatM)
				o.flatM = nil
			}
		}
		if err != nil {
			return nil, fmt.Errorf("trainer: optimizer state: %w", err)
		}
		off := 0
		ad.Params(func(name string, param, _ []float32) {
			n := len(param)
			o.names = append(o.names, name)
			o.m, o.v = append(o.m, o.flatM[off:off+n:off+n]), append(o.v, o.flatV[off:off+n:off+n])
			off += n
		})
		return o, nil
	}
	ad.Params(func(name string, param, _ []float32) {
		if err != nil {
			return
		}
		var m, v []float32
		if m, err = alloc(len(param)); err == nil {
			if v, err = alloc(len(param)); err != nil {
				kernels.FreeF32(o.be, m)
			}
		}
		if err != nil {
			err = fmt.Errorf("trainer: optimizer state of %s: %w", name, err)
			return
		}
		o.names = append(o.names, name)
		o.m, o.v = append(o.m, m), append(o.v, v)
	})
	if err != nil {
		o.Free()
		return nil, err
	}
	return o, nil
}

// Free releases the moments' memory; the optimizer must not be used
// afterwards.
func (o *AdamW) Free() {
	switch {
	case o.flatM != nil:
		kernels.FreeF32(o.be, o.flatM)
		kernels.FreeF32(o.be, o.flatV)
	case o.be != nil:
		for i := range o.m {
			kernels.FreeF32(o.be, o.m[i])
			kernels.FreeF32(o.be, o.v[i])
		}
	}
	o.names, o.m, o.v, o.flatM, o.flatV = nil, nil, nil, nil, nil
}

// GradNorm returns the global L2 norm of the adapter's gradient: each
// tensor's sum of squares on be (SumSquares' bits: kernels.SumSquaresMany,
// or kernels.SumSquaresSegments over a Flat adapter's gradient memory, one
// launch for all on kernels/cuda; one wait for all either way), added in
// float64 in Params order (deterministic on a given backend).
func GradNorm(be kernels.Backend, ad *model.Adapter) float64 {
	s := 0.0
	for _, v := range sumSquares(be, ad, true) {
		s += v
	}
	return math.Sqrt(s)
}

// sumSquares returns the sum of squares of each of ad's gradients (grads)
// or weights on be, in Params order: over a Flat adapter by one
// kernels.SumSquaresSegments of its memory, else by one
// kernels.SumSquaresMany.
func sumSquares(be kernels.Backend, ad *model.Adapter, grads bool) []float64 {
	var xs [][]float32
	ad.Params(func(_ string, p, g []float32) {
		if grads {
			xs = append(xs, g)
		} else {
			xs = append(xs, p)
		}
	})
	ss := make([]float64, len(xs))
	flat, flatG := ad.Flat()
	if grads {
		flat = flatG
	}
	if flat != nil {
		// The tensors lie in Params order with nothing between them
		// (Adapter.Flat).
		offs, ns := make([]int, len(xs)), make([]int, len(xs))
		off := 0
		for i, x := range xs {
			offs[i], ns[i] = off, len(x)
			off += len(x)
		}
		if off == len(flat) {
			kernels.SumSquaresSegments(be, ss, flat, offs, ns)
			return ss
		}
	}
	kernels.SumSquaresMany(be, ss, xs)
	return ss
}

// Update clips the gradient to MaxGradNorm as torch.nn.utils.clip_grad_norm_
// does, takes one AdamW step at rate lr
// and returns the norm before clipping. The norm is computed even without
// clipping: a NaN or Inf anywhere in the gradient makes it non-finite, and
// then nothing is updated. After the step every weight is checked too (its
// sum of squares, non-finite exactly when it holds a NaN or Inf), since a
// huge lr overflows weights to Inf from a finite gradient; on either
// failure the error matches ErrNotFinite and Step is not advanced. The
// gradient and the weights stay on the backend: only the sums come back.
func (o *AdamW) Update(be kernels.Backend, ad *model.Adapter, lr float64) (float64, error) {
	norm := GradNorm(be, ad)
	if !isFinite(norm) {
		return norm, &notFinite{what: "gradient", detail: fmt.Sprintf("its norm is %v", norm)}
	}
	params, grads := ad.Flat()
	flat := o.flatM != nil && params != nil && len(params) == len(o.flatM)
	// torch.nn.utils.clip_grad_norm_: the coefficient max/(norm + 1e-6)
	// clamped at 1, so a norm within 1e-6 below the maximum is scaled too.
	if c := o.MaxGradNorm / (norm + 1e-6); o.MaxGradNorm > 0 && c < 1 {
		s := float32(c)
		if flat {
			be.Scale(grads, grads, s, len(grads))
		} else {
			ad.Params(func(_ string, _, g []float32) { be.Scale(g, g, s, len(g)) })
		}
	}
	step := o.Step + 1
	p := o.Params
	p.LR = float32(lr)
	if flat {
		be.AdamW(params, grads, o.flatM, o.flatV, len(params), step, p)
	} else {
		i := 0
		ad.Params(func(_ string, param, g []float32) {
			be.AdamW(param, g, o.m[i], o.v[i], len(param), step, p)
			i++
		})
	}
	if err := checkWeights(be, ad); err != nil {
		return norm, err
	}
	o.Step = step
	return norm, nil
}

// checkWeights returns a notFinite error naming the first LoRA tensor that
// holds a NaN or Inf (its sum of squares is then NaN or +Inf); the sums
// come from one kernels.SumSquaresSegments or SumSquaresMany (sumSquares).
func checkWeights(be kernels.Backend, ad *model.Adapter) error {
	var names []string
	ad.Params(func(name string, _, _ []float32) { names = append(names, name) })
	for i, s := range sumSquares(be, ad, false) {
		if !isFinite(s) {
			what := "an Inf"
			if math.IsNaN(s) {
				what = "a NaN"
			}
			return &notFinite{what: "updated weights", detail: fmt.Sprintf("%s holds %s", names[i], what)}
		}
	}
	return nil
}

func isFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Tensors returns the moments under "<param>.exp_avg" / "<param>.exp_avg_sq"
// (aliasing the optimizer's memory), for saving and loading: it waits for
// the backend's queued ops first (kernels.Synchronize), and the host may
// read or write them until the next op.
func (o *AdamW) Tensors() []checkpoint.Tensor {
	if o.be != nil {
		kernels.Synchronize(o.be)
	}
	var ts []checkpoint.Tensor
	for i, n := range o.names {
		ts = append(ts, checkpoint.Tensor{Name: n + ".exp_avg", Values: o.m[i]}, checkpoint.Tensor{Name: n + ".exp_avg_sq", Values: o.v[i]})
	}
	return ts
}

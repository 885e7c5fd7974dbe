package cuda

import (
	"fmt"
	"math"

	"github.com/hone-rl/hone/kernels"
)

// chooseThreads is sample.cu's block: 32 warps, each reading its segment
// of the row 128 entries a step.
const chooseThreads = 1024

// planChooseRows: choose_rows, one block per choice.
func planChooseRows(ids, stats, logits, rows, inv, u any, n, V, threads int) []step {
	return []step{{"choose_rows", Dim3{n, 1, 1}, Dim3{threads, 1, 1}, []any{ids, stats, logits, rows, inv, u, V}, nil}}
}

// ChooseRows is kernels.RowChooser.ChooseRows on a device buffer of logits
// [R, V] (R = logits.Len()/V): n = len(rows) choices, their inputs (u as
// doubles, invTemp, rows) brought over in one cuMemcpyHtoD and their
// results (id, logit, max, lse: 4 values a choice) back in one
// cuMemcpyDtoH, which waits for the kernel and what was queued before it.
// Both live in Ops' scratch (slot "choose", 8 values a choice, kept
// between calls). The arguments are checked as kernels.NeedChooseRows
// checks them.
func (o *Ops) ChooseRows(logits *Buffer, V int, rows []int32, invTemp []float32, u []float64) ([]kernels.RowChoice, error) {
	c := check{op: "ChooseRows"}
	n := len(rows)
	c.sizes("n, V", n, V)
	if len(invTemp) != n || len(u) != n {
		c.fail("%d rows, %d invTemp, %d u: want one of each a choice", n, len(invTemp), len(u))
	}
	if c.err != nil {
		return nil, c.err
	}
	if n == 0 {
		return nil, nil
	}
	if V == 0 {
		return nil, fmt.Errorf("CUDA %s: V = 0: no token to choose", c.op)
	}
	c.buf(o.d, "logits", logits, V)
	if c.err != nil {
		return nil, c.err
	}
	R := logits.Len() / V
	in := make([]float32, 4*n) // u (2n: doubles), invTemp (n), rows (n)
	for i := range n {
		if rows[i] < 0 || int(rows[i]) >= R {
			return nil, fmt.Errorf("CUDA %s: rows[%d] = %d outside the %d rows of logits", c.op, i, rows[i], R)
		}
		if v := invTemp[i]; !(v >= 0) || math.IsInf(float64(v), 1) {
			return nil, fmt.Errorf("CUDA %s: invTemp[%d] = %g: want 0 or a finite value > 0", c.op, i, v)
		}
		// Little-endian, as the device's doubles.
		bits := math.Float64bits(u[i])
		in[2*i], in[2*i+1] = math.Float32frombits(uint32(bits)), math.Float32frombits(uint32(bits>>32))
		in[2*n+i] = invTemp[i]
		in[3*n+i] = math.Float32frombits(uint32(rows[i]))
	}
	threads := chooseThreads
	if o.chooseThreads > 0 {
		threads = o.chooseThreads
	}
	sc := o.lockScratch()
	defer sc.unlock()
	scratch, err := sc.get(c.op, "choose", 8*n)
	if err != nil {
		return nil, err
	}
	// The upload from pageable memory waits for the queued work first (the
	// driver's documented behaviour): no kernel still reads the slot.
	if err := scratch.view(0, 4*n).Upload(in); err != nil {
		return nil, fmt.Errorf("CUDA %s: %w", c.op, err)
	}
	out := scratch.view(4*n, 4*n)
	steps := planChooseRows(out.view(0, n), out.view(n, 3*n), logits, scratch.view(3*n, n), scratch.view(2*n, n), scratch.view(0, 2*n), n, V, threads)
	if err := o.run(c.op, steps); err != nil {
		return nil, err
	}
	host := make([]float32, 4*n)
	if err := out.Download(host); err != nil {
		return nil, fmt.Errorf("CUDA %s: %w", c.op, err)
	}
	res := make([]kernels.RowChoice, n)
	for i := range res {
		res[i] = kernels.RowChoice{ID: int32(math.Float32bits(host[i])), Logit: host[n+3*i], Max: host[n+3*i+1], LSE: host[n+3*i+2]}
		if res[i].ID < 0 || int(res[i].ID) >= V {
			return nil, fmt.Errorf("CUDA %s: choice %d: the kernel gave token %d outside [0, %d)", c.op, i, res[i].ID, V)
		}
	}
	return res, nil
}

var _ kernels.RowChooser = (*Backend)(nil)

// ChooseRows implements kernels.RowChooser (Ops.ChooseRows, sample.cu):
// one launch for every choice, and only 4 values a choice come back to
// the host, where a host sampler would read every row of the managed
// logits. It orders itself after the ops queued before it in the
// stream-ordered mode (its copies wait for them). Not run on a GPU yet.
func (b *Backend) ChooseRows(dst []kernels.RowChoice, logits []float32, V int, rows []int32, invTemp []float32, u []float64) {
	const op = "ChooseRows"
	kernels.NeedChooseRows(dst, logits, V, rows, invTemp, u)
	n := len(dst)
	if n == 0 {
		return
	}
	b.onDevice(op, func() error {
		res, err := b.ops.ChooseRows(b.f32(op, "logits", logits), V, rows[:n], invTemp[:n], u[:n])
		if err != nil {
			return err
		}
		copy(dst, res)
		return nil
	})
}

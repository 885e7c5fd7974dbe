package cuda

import (
	"fmt"
	"math"

	"github.com/hone-rl/hone/kernels"
)

// chooseThreads is sample.cu's block: 32 warps, each reading its segment
// of a chunk 128 entries a step.
const chooseThreads = 1024

// chooseBlocksTarget is how many blocks ChooseRows' chunk launches aim
// for: two per SM of an H200 (132 SMs), a fixed target because the
// bindings do not read the device's SM count (Device has its compute
// capability only). At decode batch 32 that is 9 chunks a row of 151,936
// instead of one block a row on 32 of the 132 SMs.
const chooseBlocksTarget = 264

// choosePerThread is the fewest entries a thread of a chunk's block reads
// (a chunk is at least choosePerThread·threads long, V allowing): below
// that a block's launch and reductions cost more than its loads.
const choosePerThread = 4

// chooseStep is sample.cu's CHOOSE_UNROLL·32: chunks start at multiples of
// it, so that a warp's steps stay aligned as the row's start is.
const chooseStep = 128

// chooseChunks returns the chunk length L and the chunks a row B (the
// last one V − (B−1)·L long) for n choices from rows of V with blocks of
// threads: about chooseBlocksTarget blocks in all, no chunk shorter than
// choosePerThread·threads unless the row is, L a multiple of chooseStep.
func chooseChunks(n, V, threads int) (L, B int) {
	B = max(1, min((chooseBlocksTarget+n-1)/n, V/(choosePerThread*threads)))
	L = ((V+B-1)/B + chooseStep - 1) / chooseStep * chooseStep
	return L, (V + L - 1) / L
}

// choosePartials is the number of float32 values of the partials of n
// choices in B chunks with blocks of threads: sum1, sumT and segT (per
// warp) in doubles, then pmax and parg.
func choosePartials(n, B, threads int) int {
	nb := n * B
	return 2*(2*nb+nb*threads/32) + 2*nb
}

// planChooseRows: choose_rows_max and choose_rows_sum, B blocks a choice
// (one a chunk), then choose_rows, one block a choice, with the partials
// in part (choosePartials values).
func planChooseRows(ids, stats, logits, rows, inv, u any, part *Buffer, n, V, L, B, threads int) []step {
	nb := n * B
	sum1, sumT := part.view(0, 2*nb), part.view(2*nb, 2*nb)
	segT := part.view(4*nb, 2*nb*threads/32)
	off := 4*nb + 2*nb*threads/32
	pmax, parg := part.view(off, nb), part.view(off+nb, nb)
	grid, block := Dim3{nb, 1, 1}, Dim3{threads, 1, 1}
	return []step{
		{Kernel: "choose_rows_max", Grid: grid, Block: block, Args: []any{pmax, parg, logits, rows, V, L, B}},
		{Kernel: "choose_rows_sum", Grid: grid, Block: block, Args: []any{sum1, sumT, segT, pmax, logits, rows, inv, V, L, B}},
		{Kernel: "choose_rows", Grid: Dim3{n, 1, 1}, Block: block, Args: []any{ids, stats, pmax, parg, sum1, sumT, segT, logits, rows, inv, u, V, L, B}},
	}
}

// ChooseRows is kernels.RowChooser.ChooseRows on a device buffer of logits
// [R, V] (R = logits.Len()/V): n = len(rows) choices, their inputs (u as
// doubles, invTemp, rows) brought over in one cuMemcpyHtoD and their
// results (id, logit, max, lse: 4 values a choice) back in one
// cuMemcpyDtoH, which waits for the kernels and what was queued before
// them. Both live in Ops' scratch (slot "choose", 8 values a choice), and
// the chunks' partials between the three launches in slot
// "choose.partials" (choosePartials), both kept between calls. The
// arguments are checked as kernels.NeedChooseRows checks them.
func (o *Ops) ChooseRows(logits *Buffer, V int, rows []int32, invTemp []float32, u []float64) ([]kernels.RowChoice, error) {
	return o.chooseRows(logits, V, rows, invTemp, u, 0)
}

// chooseRows is ChooseRows with chunks of L entries when L > 0 (tests; L ≥
// V is one block a row), chooseChunks' otherwise.
func (o *Ops) chooseRows(logits *Buffer, V int, rows []int32, invTemp []float32, u []float64, L int) ([]kernels.RowChoice, error) {
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
	B := 0
	if L > 0 {
		L = min(L, V)
		B = (V + L - 1) / L
	} else {
		L, B = chooseChunks(n, V, threads)
	}
	part, err := sc.get(c.op, "choose.partials", choosePartials(n, B, threads))
	if err != nil {
		return nil, err
	}
	// The upload from pageable memory waits for the queued work first (the
	// driver's documented behaviour): no kernel still reads the slot.
	if err := scratch.view(0, 4*n).Upload(in); err != nil {
		return nil, fmt.Errorf("CUDA %s: %w", c.op, err)
	}
	out := scratch.view(4*n, 4*n)
	steps := planChooseRows(out.view(0, n), out.view(n, 3*n), logits, scratch.view(3*n, n), scratch.view(2*n, n), scratch.view(0, 2*n),
		part, n, V, L, B, threads)
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
		// −1: a row with no candidate (every entry NaN or −Inf), which
		// the kernel reports with a max of −Inf.
		if none := res[i].ID == -1 && math.IsInf(float64(res[i].Max), -1); !none && (res[i].ID < 0 || int(res[i].ID) >= V) {
			return nil, fmt.Errorf("CUDA %s: choice %d: the kernel gave token %d outside [0, %d)", c.op, i, res[i].ID, V)
		}
	}
	return res, nil
}

var _ kernels.RowChooser = (*Backend)(nil)

// ChooseRows implements kernels.RowChooser (Ops.ChooseRows, sample.cu):
// three launches for every choice together (each row split into chunks
// over many blocks, chooseChunks), and only 4 values a choice come back to
// the host, where a host sampler would read every row of the managed
// logits. It orders itself after the ops queued before it in the
// stream-ordered mode (its copies wait for them). Not run on a GPU yet.
func (b *Backend) ChooseRows(dst []kernels.RowChoice, logits []float32, V int, rows []int32, invTemp []float32, u []float64) {
	b.chooseRows(dst, logits, V, rows, invTemp, u, 0)
}

// chooseRows is ChooseRows with Ops.chooseRows' chunks of L.
func (b *Backend) chooseRows(dst []kernels.RowChoice, logits []float32, V int, rows []int32, invTemp []float32, u []float64, L int) {
	const op = "ChooseRows"
	kernels.NeedChooseRows(dst, logits, V, rows, invTemp, u)
	n := len(dst)
	if n == 0 {
		return
	}
	b.onDevice(op, func() error {
		res, err := b.ops.chooseRows(b.f32(op, "logits", logits), V, rows[:n], invTemp[:n], u[:n], L)
		if err != nil {
			return err
		}
		copy(dst, res)
		return nil
	})
}

package cuda_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/cudafake"
	"github.com/hone-rl/hone/kernels/ref"
)

// streamBackend is emulatedBackend stream-ordered (SetSyncEachOp(false))
// on a driver in the deferred mode: launches, GEMMs and device memsets run
// only at the synchronization points.
func streamBackend(t *testing.T) (*cuda.Backend, *cudafake.Driver) {
	t.Helper()
	b, drv, _ := emulatedBackend(t)
	if err := drv.SetDeferred(true); err != nil {
		t.Fatal(err)
	}
	b.SetSyncEachOp(false)
	return b, drv
}

// allocIota allocates n values i·scale+off on b.
func allocIota(t *testing.T, b *cuda.Backend, n int, scale, off float32) []float32 {
	t.Helper()
	x, err := b.AllocF32(n)
	if err != nil {
		t.Fatal(err)
	}
	for i := range x {
		x[i] = float32(i)*scale + off
	}
	return x
}

// TestStreamOrderedDefers: in the stream-ordered mode an op returns with
// its work queued — the host reads the managed memory it writes unchanged
// — and Synchronize runs it; with each op synchronized (the default) and
// while a profile runs, nothing stays queued.
func TestStreamOrderedDefers(t *testing.T) {
	b, drv := streamBackend(t)
	defer b.Close()
	const n = 64
	x, y := allocIota(t, b, n, 1, 1), allocIota(t, b, n, 0, 0)
	defer b.FreeF32(x)
	defer b.FreeF32(y)
	b.Scale(y, x, 2, n)
	b.AXPY(y, x, 1, n) // y = 3x, queued after Scale
	if drv.Pending() != 2 {
		t.Fatalf("%d launches queued after two stream-ordered ops, want 2", drv.Pending())
	}
	if y[5] != 0 {
		t.Fatalf("y[5] = %v before Synchronize: the deferred device ran a queued launch", y[5])
	}
	b.Synchronize()
	if drv.Pending() != 0 {
		t.Fatalf("%d launches queued after Synchronize", drv.Pending())
	}
	for i := range y {
		if y[i] != 3*x[i] {
			t.Fatalf("y[%d] = %v after Synchronize, want %v", i, y[i], 3*x[i])
		}
	}

	b.StartProfile()
	b.Scale(y, x, 4, n)
	if drv.Pending() != 0 || y[1] != 4*x[1] {
		t.Errorf("while a profile runs: %d launches queued, y[1] = %v: want every op synchronized", drv.Pending(), y[1])
	}
	b.StopProfile()

	b.SetSyncEachOp(true)
	if !b.SyncEachOp() {
		t.Error("SyncEachOp false after SetSyncEachOp(true)")
	}
	b.Scale(y, x, 5, n)
	if drv.Pending() != 0 || y[1] != 5*x[1] {
		t.Errorf("each op synchronized: %d launches queued, y[1] = %v", drv.Pending(), y[1])
	}
}

// TestStreamOrderedEdges: where the host gets results without calling
// Synchronize, they are the queued ops': CopyToHost and SumSquares (their
// cuMemcpyDtoH comes after the queued work), RowMax and ExpShift (which
// wait first), a GEMM's result, ops whose int32 edges overwrite the
// scratch a queued op still reads (cuMemcpyHtoD from pageable memory
// waits for the stream), and a free of memory a queued op writes.
func TestStreamOrderedEdges(t *testing.T) {
	b, drv := streamBackend(t)
	defer b.Close()
	const n = 48
	x, y := allocIota(t, b, n, 0.25, -3), allocIota(t, b, n, 0, 0)
	defer b.FreeF32(x)
	defer b.FreeF32(y)

	b.Scale(y, x, 2, n)
	host := make([]float32, n)
	b.CopyToHost(host, y, n)
	for i := range host {
		if host[i] != 2*x[i] {
			t.Fatalf("CopyToHost after a queued Scale: [%d] = %v, want %v", i, host[i], 2*x[i])
		}
	}

	b.Scale(y, x, 3, n)
	var want float64
	for _, v := range x {
		want += 9 * float64(v) * float64(v)
	}
	if got := b.SumSquares(y, n); math.Abs(got-want) > 1e-9*want {
		t.Errorf("SumSquares after a queued Scale: %v, want %v", got, want)
	}

	b.Scale(y, x, -1, n)
	if got := b.RowMax(y); got != 3 { // max of -x: -(-3)
		t.Errorf("RowMax after a queued Scale: %v, want 3", got)
	}
	b.Scale(y, x, 0.5, n)
	dst := make([]float32, n)
	half, wantDst := make([]float32, n), make([]float32, n)
	for i, v := range x {
		half[i] = 0.5 * v
	}
	ref.New().ExpShift(wantDst, half, 1, 1)
	b.ExpShift(dst, y, 1, 1)
	if !slices.Equal(dst, wantDst) {
		t.Errorf("ExpShift after a queued Scale differs from ref's on the scaled row")
	}

	// A GEMM (the fake cuBLAS queues it too) on a queued op's output.
	a, c := allocIota(t, b, 6, 1, 0), allocIota(t, b, 4, 0, 0)
	defer b.FreeF32(a)
	defer b.FreeF32(c)
	b.Scale(a, a, 2, 6) // a = 2·[0..5]
	b.Matmul(c, a[:4], a[2:6], 2, 2, 2, false, false, 0)
	if drv.Pending() != 2 {
		t.Errorf("%d queued after a Scale and a Matmul, want 2", drv.Pending())
	}
	b.Synchronize()
	wantC := make([]float32, 4)
	ref.New().Matmul(wantC, []float32{0, 2, 4, 6}, []float32{4, 6, 8, 10}, 2, 2, 2, false, false, 0)
	if !slices.Equal(c, wantC) {
		t.Errorf("Matmul on a queued Scale's output: %v, want %v", c, wantC)
	}

	// Two gathers back to back: the second's ids overwrite the scratch
	// the first (queued) reads.
	const C, V = 2, 5
	table := allocIota(t, b, V*C, 1, 0)
	defer b.FreeF32(table)
	out1, out2 := allocIota(t, b, 3*C, 0, 0), allocIota(t, b, 3*C, 0, 0)
	defer b.FreeF32(out1)
	defer b.FreeF32(out2)
	ids1, ids2 := []int32{4, 0, 2}, []int32{1, 3, 1}
	b.EmbeddingForward(out1, ids1, table, 3, C, V)
	b.EmbeddingForward(out2, ids2, table, 3, C, V)
	b.Synchronize()
	for k, c := range []struct {
		out []float32
		ids []int32
	}{{out1, ids1}, {out2, ids2}} {
		w := make([]float32, 3*C)
		ref.New().EmbeddingForward(w, c.ids, table, 3, C, V)
		if !slices.Equal(c.out, w) {
			t.Errorf("gather %d of two queued back to back: %v, want %v", k+1, c.out, w)
		}
	}

	// A free waits for the queued op writing the memory.
	z := allocIota(t, b, n, 0, 0)
	b.Scale(z, x, 2, n)
	b.FreeF32(z)
	if drv.Pending() != 0 {
		t.Errorf("%d launches queued after FreeF32 of their output", drv.Pending())
	}
}

// TestStreamOrderedMissingSync: without its synchronization (a test-only
// switch) the host reads what was there before the queued ops — the
// failure a missing Synchronize causes, which the deferred emulated device
// makes certain rather than a race.
func TestStreamOrderedMissingSync(t *testing.T) {
	b, _ := streamBackend(t)
	defer b.Close()
	const n = 16
	x, y := allocIota(t, b, n, 1, 0), allocIota(t, b, n, 0, 0)
	defer b.FreeF32(x)
	defer b.FreeF32(y)
	cuda.SetSkipSync(b, true)
	b.Scale(y, x, 2, n)
	if got := b.RowMax(y); got != 0 {
		t.Errorf("RowMax without its wait: %v, want 0 (the value before the queued Scale)", got)
	}
	b.Synchronize()
	if y[n-1] != 0 {
		t.Errorf("y[%d] = %v after a skipped Synchronize, want 0 (not yet computed)", n-1, y[n-1])
	}
	cuda.SetSkipSync(b, false)
	b.Synchronize()
	if got := b.RowMax(y); got != 2*(n-1) {
		t.Errorf("RowMax after Synchronize: %v, want %v", got, 2*(n-1))
	}
}

// TestStreamOrderedFailure: a failure at a synchronization point panics
// naming the call and saying the failing op may be an earlier one.
func TestStreamOrderedFailure(t *testing.T) {
	b, drv := streamBackend(t)
	defer b.Close()
	x := allocIota(t, b, 8, 1, 0)
	defer b.FreeF32(x)
	b.Scale(x, x, 2, 8)
	drv.FailNext("cuCtxSynchronize", 719)
	msg := func() (msg string) {
		defer func() { msg, _ = recover().(string) }()
		b.Synchronize()
		return ""
	}()
	for _, want := range []string{"kernels.Synchronize", "CUDA_ERROR_LAUNCH_FAILED", "may be an earlier one"} {
		if !strings.Contains(msg, want) {
			t.Errorf("panic %q does not say %q", msg, want)
		}
	}
}

// TestStreamOrderedEdgeBuffers: stream-ordered, an op whose int32 values
// one of the backend's edge buffers holds already copies nothing and so
// waits for nothing (the earlier ops stay queued); new values take the
// least recently used of at most four buffers (a copy, which waits for the
// queued ops first), growing it when it is too small; every gather is
// right in the end.
func TestStreamOrderedEdgeBuffers(t *testing.T) {
	b, drv := streamBackend(t)
	defer b.Close()
	const C, V = 2, 7
	table := allocIota(t, b, V*C, 1, 0)
	defer b.FreeF32(table)
	idsOf := func(k, n int) []int32 {
		ids := make([]int32, n)
		for i := range ids {
			ids[i] = int32((i*3 + k) % V)
		}
		return ids
	}
	type call struct {
		ids                []int32
		copies, queuedPrev bool
	}
	calls := []call{
		{idsOf(0, 5), true, false},
		{idsOf(0, 5), false, true}, // the same values: no copy, no wait
		{idsOf(1, 5), true, false},
		{idsOf(2, 5), true, false},
		{idsOf(3, 5), true, false},
		{idsOf(0, 5), false, true}, // still held (four buffers)
		{idsOf(4, 5), true, false}, // overwrites idsOf(1)'s, the least recently used
		{idsOf(1, 5), true, false}, // gone: copied again
		{idsOf(5, 5000), true, false},
	}
	var outs [][]float32
	for _, c := range calls { // first: a managed allocation waits for the queue (its memset)
		out := allocIota(t, b, len(c.ids)*C, 0, 0)
		defer b.FreeF32(out)
		outs = append(outs, out)
	}
	for k, c := range calls {
		N := len(c.ids)
		copies, pending := drv.Calls("cuMemcpyHtoD_v2"), drv.Pending()
		b.EmbeddingForward(outs[k], c.ids, table, N, C, V)
		if got := drv.Calls("cuMemcpyHtoD_v2") - copies; got != map[bool]int{true: 1, false: 0}[c.copies] {
			t.Errorf("call %d: %d host-to-device copies, want copies=%v", k, got, c.copies)
		}
		if c.queuedPrev && drv.Pending() != pending+1 {
			t.Errorf("call %d: %d queued after it, %d before: it waited for the queued ops", k, drv.Pending(), pending)
		}
		if !c.queuedPrev && drv.Pending() != 1 {
			t.Errorf("call %d: %d queued after a copy, want its own launch only", k, drv.Pending())
		}
	}
	if n, _ := b.Scratch(); n != 4 {
		t.Errorf("%d scratch buffers, want the four edge buffers", n)
	}
	b.Synchronize()
	for k, c := range calls {
		N := len(c.ids)
		w := make([]float32, N*C)
		ref.New().EmbeddingForward(w, c.ids, table, N, C, V)
		if !slices.Equal(outs[k], w) {
			t.Errorf("call %d: gather differs from ref's", k)
		}
	}
}

package cudafake

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/hone-rl/hone/kernels/cuda"
)

// ltProduct sets up a 2×2×2 bfloat16 product for the fake cuBLASLt and
// returns a call of it with algorithm algo (an index in the heuristic's
// list), writing D at out (0: C in place).
func ltProduct(t *testing.T, d *Driver, lt *BLASLt) (run func(algo int, out cuda.DevPtr) error, c cuda.DevPtr) {
	t.Helper()
	h, err := lt.Create()
	if err != nil {
		t.Fatal(err)
	}
	desc, _ := lt.MatmulDescCreate(cuda.Compute32F, cuda.R32F)
	la, _ := lt.MatrixLayoutCreate(cuda.R16BF, 2, 2, 2)
	lc, _ := lt.MatrixLayoutCreate(cuda.R32F, 2, 2, 2)
	pref, _ := lt.MatmulPreferenceCreate()
	res, err := lt.MatmulAlgoGetHeuristic(h, desc, la, la, lc, lc, pref, 8)
	if err != nil {
		t.Fatal(err)
	}
	a, err := d.MemAlloc(8)
	if err != nil {
		t.Fatal(err)
	}
	bf := make([]byte, 8)
	for i, v := range []float32{1, 2, 3, 4} {
		binary.LittleEndian.PutUint16(bf[2*i:], uint16(math.Float32bits(v)>>16))
	}
	if err := d.MemcpyHtoD(a, bf); err != nil {
		t.Fatal(err)
	}
	if c, err = d.MemAlloc(16); err != nil {
		t.Fatal(err)
	}
	return func(algo int, out cuda.DevPtr) error {
		if out == 0 {
			out = c
		}
		return lt.Matmul(h, cuda.LtMatmul{Desc: desc, Alpha: 1, A: a, ALayout: la, B: a, BLayout: la, C: c, CLayout: lc,
			D: out, DLayout: lc, Algo: res[algo].Algo})
	}, c
}

// TestEventsStreamOrdered: events read the stream's virtual clock, which
// the fake cuBLASLt's products move by their algorithm's cost. In the
// deferred mode a record is pending until a synchronization point runs
// the queue up to it (cuEventElapsedTime says CUDA_ERROR_NOT_READY
// before), and cuEventSynchronize runs the queue no further than the
// event. Unrecorded and unknown events are refused.
func TestEventsStreamOrdered(t *testing.T) {
	d := ready(t)
	lt := NewBLASLt(d)
	lt.SetAlgos(3, []float64{2, 0.5, 7})
	run, _ := ltProduct(t, d, lt)
	start, err := d.EventCreate()
	if err != nil {
		t.Fatal(err)
	}
	end, _ := d.EventCreate()
	_, err = d.EventElapsedTime(start, end)
	wantCode(t, "elapsed time of events never recorded", err, "CUDA_ERROR_INVALID_HANDLE")
	if err := d.EventSynchronize(start); err != nil {
		t.Errorf("cuEventSynchronize of an event never recorded: %v, want success", err)
	}
	// Immediate mode: everything has run when the record returns.
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(d.EventRecord(start))
	must(run(0, 0))
	must(run(2, 0))
	must(d.EventRecord(end))
	if ms, err := d.EventElapsedTime(start, end); err != nil || ms != 9 {
		t.Errorf("algorithms 0 and 2 timed at %v ms (%v), want 9", ms, err)
	}
	// Deferred: the records and products queue.
	must(d.SetDeferred(true))
	must(d.EventRecord(start))
	for range 4 {
		must(run(1, 0))
	}
	must(d.EventRecord(end))
	must(run(2, 0)) // after end: not part of the time, left queued by cuEventSynchronize(end)
	_, err = d.EventElapsedTime(start, end)
	wantCode(t, "elapsed time before a synchronization", err, "CUDA_ERROR_NOT_READY")
	before := d.Clock()
	must(d.EventSynchronize(end))
	if ms, err := d.EventElapsedTime(start, end); err != nil || ms != 2 {
		t.Errorf("four runs of algorithm 1 timed at %v ms (%v), want 2", ms, err)
	}
	if p := d.Pending(); p != 2 { // the product after end and its clock step
		t.Errorf("%d items queued after cuEventSynchronize(end), want the 2 recorded after it", p)
	}
	if c := d.Clock(); c != before+2 {
		t.Errorf("clock %v after cuEventSynchronize(end), want %v", c, before+2)
	}
	must(d.SetDeferred(false))
	if c := d.Clock(); c != before+9 {
		t.Errorf("clock %v after the queue ran, want %v", c, before+9)
	}
	must(d.EventDestroy(start))
	must(d.EventDestroy(end))
	wantCode(t, "a destroyed event", d.EventRecord(start), "CUDA_ERROR_INVALID_HANDLE")
	if n := d.Events(); n != 0 {
		t.Errorf("%d events live after destroying both", n)
	}
}

// TestBLASLtAlgorithms: the heuristic offers as many algorithms as SetAlgos
// says (no more than asked for); algorithm i ≥ 1 splits its K sums, so its
// bits may differ from algorithm 0's while staying within float32
// rounding of it; an algorithm marked unsupported fails with
// CUBLAS_STATUS_NOT_SUPPORTED; out of place, C keeps its contents and D
// gets the product plus beta·C.
func TestBLASLtAlgorithms(t *testing.T) {
	d := ready(t)
	lt := NewBLASLt(d)
	lt.SetAlgos(4, nil, 3)
	run, c := ltProduct(t, d, lt)
	read := func(p cuda.DevPtr) [4]float32 {
		b := make([]byte, 16)
		if err := d.MemcpyDtoH(b, p); err != nil {
			t.Fatal(err)
		}
		var v [4]float32
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return v
	}
	for algo := range 3 {
		if err := run(algo, 0); err != nil {
			t.Fatalf("algorithm %d: %v", algo, err)
		}
		// [1 3; 2 4]·[1 3; 2 4] column-major: small integers, exact in
		// every split.
		if got, want := read(c), [4]float32{7, 10, 15, 22}; got != want {
			t.Errorf("algorithm %d: %v, want %v", algo, got, want)
		}
	}
	var ce *cuda.Error
	if err := run(3, 0); !errors.As(err, &ce) || ce.Code != cuda.BLASStatusNotSupported {
		t.Errorf("algorithm marked unsupported: %v", err)
	}
	out, err := d.MemAlloc(16)
	if err != nil {
		t.Fatal(err)
	}
	if err := run(1, out); err != nil {
		t.Fatal(err)
	}
	if got, want := read(out), [4]float32{7, 10, 15, 22}; got != want {
		t.Errorf("out of place: D = %v, want %v", got, want)
	}
	if runs := lt.Runs(); len(runs) != 4 || runs[3] != (LtRun{Algo: 1}) || runs[0] != (LtRun{Algo: 0, InPlace: true}) {
		t.Errorf("runs %+v", runs)
	}
	// Split sums round differently: K = 3 with values whose float64 sum
	// is exact but whose float32 partial sums are not.
	g := cuda.Gemm{M: 1, N: 1, K: 3, Alpha: 1, LDA: 1, LDB: 3, LDC: 1}
	mk := func(vals ...float32) matrix {
		m := matrix{mem: make([]byte, 4*len(vals)), ld: 1}
		for i, v := range vals {
			binary.LittleEndian.PutUint32(m.mem[4*i:], math.Float32bits(v))
		}
		return m
	}
	a, b := mk(1, 1, 1), mk(1<<24, 1, 1)
	one, split := mk(0), mk(0)
	productSplit(g, a, b, one, 1)
	productSplit(g, a, b, split, 3)
	if x, y := one.at(0, 0), split.at(0, 0); x != 1<<24+2 || y != 1<<24 {
		t.Errorf("2²⁴+1+1: one sum %v, three float32 parts %v; want %v and %v", x, y, float32(1<<24+2), float32(1<<24))
	}
}

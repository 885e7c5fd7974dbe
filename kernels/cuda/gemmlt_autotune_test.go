package cuda_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/ebitengine/purego"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/cudafake"
)

// openFakeLtDrv is openFakeLt returning the fake driver too, with at most
// memLimit bytes of device memory (0: no limit).
func openFakeLtDrv(t *testing.T, memLimit int) (*cuda.Device, *cudafake.Driver, *cudafake.BLASLt) {
	t.Helper()
	dev, drv, _ := openFake(t, memLimit)
	lt := cudafake.NewBLASLt(drv)
	if err := dev.UseBLASLt(lt); err != nil {
		t.Fatal(err)
	}
	return dev, drv, lt
}

// sameBits reports whether a and b hold the same float32 bit patterns.
func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// TestMatmulBF16LtAutotune: the fake heuristic offers four algorithms whose
// runs cost 3, 1, 2 and 5 ms on the stream's clock and whose bits differ
// (algorithm i splits its K sums in i+1 parts). A new shape's first call
// times each (a warm-up and three timed runs), keeps algorithm 1, the
// fastest, though it is not the last one timed, and its result has the
// bits of algorithm 1: those the second call (the cached plan, no timing)
// gives, not algorithm 0's (cublasGemmEx's on the fake) — with beta 0,
// where the candidates write C in place before the chosen one's own run,
// and with beta 1, where they write a temporary D and C keeps its
// contents for that run. The same holds in the deferred mode, where the
// products and the events' records only queue; every event and temporary
// is released.
func TestMatmulBF16LtAutotune(t *testing.T) {
	const M, N, K = 6, 5, 96
	for _, deferred := range []bool{false, true} {
		for _, beta := range []float32{0, 1} {
			dev, drv, lt := openFakeLtDrv(t, 0)
			lt.SetAlgos(4, []float64{3, 1, 2, 5})
			if err := drv.SetDeferred(deferred); err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(7, uint64(beta)))
			a, b := uploadRoundedBF16(t, dev, randn(r, M*K)), uploadRoundedBF16(t, dev, randn(r, K*N))
			ws, err := dev.Alloc(1 << 18)
			if err != nil {
				t.Fatal(err)
			}
			c0 := randn(r, M*N)
			cx, cl := upload(t, dev, c0), upload(t, dev, c0)
			liveBefore, _ := drv.Live()
			if err := dev.MatmulBF16(cx, a, b, M, N, K, false, true, beta); err != nil {
				t.Fatal(err)
			}
			var outs [2][]float32
			for call := range 2 {
				if err := cl.Upload(c0); err != nil {
					t.Fatal(err)
				}
				if err := dev.MatmulBF16Lt(cl, a, b, ws, M, N, K, false, true, beta); err != nil {
					t.Fatalf("deferred=%v beta=%g call %d: %v", deferred, beta, call, err)
				}
				outs[call] = download(t, cl)
			}
			what := func(s string) string { return s + map[bool]string{false: "", true: " (deferred)"}[deferred] }
			gemmEx := download(t, cx)
			if !sameBits(outs[0], outs[1]) {
				t.Errorf(what("beta=%g: the first call (autotuned) and the second (its plan) differ in bits"), beta)
			}
			if sameBits(outs[0], gemmEx) {
				t.Fatalf(what("beta=%g: algorithm 1 gave algorithm 0's bits: the test cannot tell them apart"), beta)
			}
			near(t, what("autotuned vs GemmEx"), outs[0], gemmEx, 1e-5)
			// The runs: 4 candidates × 4, then the chosen one's own run; the
			// second call runs it alone.
			runs := lt.Runs()
			if len(runs) != 18 {
				t.Fatalf(what("beta=%g: %d cublasLtMatmul runs, want 18: %+v"), beta, len(runs), runs)
			}
			for i, run := range runs[:16] {
				if want := (cudafake.LtRun{Algo: i / 4, InPlace: beta == 0}); run != want {
					t.Errorf(what("beta=%g: timing run %d is %+v, want %+v"), beta, i, run, want)
				}
			}
			for _, run := range runs[16:] {
				if want := (cudafake.LtRun{Algo: 1, InPlace: true}); run != want {
					t.Errorf(what("beta=%g: the product's own run is %+v, want %+v"), beta, run, want)
				}
			}
			if n := dev.LtTuned(); n != 1 {
				t.Errorf(what("%d shapes tuned, want 1"), n)
			}
			if n := drv.Events(); n != 0 {
				t.Errorf(what("%d events left"), n)
			}
			if n, _ := drv.Live(); n != liveBefore {
				t.Errorf(what("beta=%g: %d allocations after the calls, %d before (the temporary D left)"), beta, n, liveBefore)
			}
			for _, x := range []*cuda.Buffer{a, b, ws, cx, cl} {
				if err := x.Free(); err != nil {
					t.Fatal(err)
				}
			}
			if err := dev.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestMatmulBF16LtAutotuneChoice: a tie goes to the heuristic's earlier
// candidate; a candidate refusing with CUBLAS_STATUS_NOT_SUPPORTED is
// skipped (the next fastest kept); a heuristic offering one algorithm, or
// the autotune turned off, times nothing and keeps the heuristic's first;
// a heuristic offering none, or candidates all refusing, is an error.
func TestMatmulBF16LtAutotuneChoice(t *testing.T) {
	const M, N, K = 4, 3, 8
	for _, tc := range []struct {
		name        string
		algos       int
		cost        []float64
		unsupported []int
		tune        int // SetLtAutotune when > 0
		want        int // the algorithm of the product's own run; -1: an error
		timed       bool
		err         string
	}{
		{name: "tie", algos: 3, cost: []float64{2, 2, 2}, want: 0, timed: true},
		{name: "fastest last", algos: 3, cost: []float64{2, 3, 1}, want: 2, timed: true},
		{name: "fastest unsupported", algos: 3, cost: []float64{2, 5, 0.5}, unsupported: []int{2}, want: 0, timed: true},
		{name: "first unsupported", algos: 3, cost: []float64{0.5, 5, 2}, unsupported: []int{0}, want: 2, timed: true},
		{name: "one algorithm", algos: 1, want: 0},
		{name: "autotune off", algos: 4, cost: []float64{9, 1, 1, 1}, tune: 1, want: 0},
		{name: "two of four timed", algos: 4, cost: []float64{9, 8, 1, 1}, tune: 2, want: 1, timed: true},
		{name: "none offered", algos: 0, want: -1, err: "no algorithm for op(A)=N op(B)=N m=3 n=4 k=8"},
		{name: "all unsupported", algos: 2, unsupported: []int{0, 1}, want: -1, err: "none of the heuristic's 2 algorithms ran"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev, drv, lt := openFakeLtDrv(t, 0)
			defer dev.Close()
			lt.SetAlgos(tc.algos, tc.cost, tc.unsupported...)
			if tc.tune > 0 {
				dev.SetLtAutotune(tc.tune)
			}
			r := rand.New(rand.NewPCG(9, 10))
			a, b := uploadRoundedBF16(t, dev, randn(r, M*K)), uploadRoundedBF16(t, dev, randn(r, K*N))
			c := upload(t, dev, make([]float32, M*N))
			err := dev.MatmulBF16Lt(c, a, b, nil, M, N, K, false, false, 0)
			if tc.want < 0 {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an error saying %q", err, tc.err)
				}
				if n := dev.LtPlans(); n != 0 {
					t.Errorf("%d plans kept after a failed plan", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			runs := lt.Runs()
			if last := runs[len(runs)-1]; last != (cudafake.LtRun{Algo: tc.want, InPlace: true}) {
				t.Errorf("the product ran as %+v, want algorithm %d in place", last, tc.want)
			}
			if timed := dev.LtTuned() == 1; timed != tc.timed || (!timed && len(runs) != 1) {
				t.Errorf("timed %v (%d runs), want %v", timed, len(runs), tc.timed)
			}
			if tc.tune > 1 {
				for _, run := range runs {
					if run.Algo >= tc.tune {
						t.Errorf("algorithm %d ran with %d candidates asked for", run.Algo, tc.tune)
					}
				}
			}
			if n := drv.Events(); n != 0 {
				t.Errorf("%d events left", n)
			}
		})
	}
}

// TestMatmulBF16LtAutotuneNoScratch: with beta 1 the candidates need a
// temporary output the size of C; when the device has no memory for it the
// shape keeps the heuristic's first algorithm untimed, and the product is
// still right.
func TestMatmulBF16LtAutotuneNoScratch(t *testing.T) {
	const M, N, K = 64, 64, 8
	// a, b and c (16 KiB) fit, a second c does not.
	dev, _, lt := openFakeLtDrv(t, 2*M*K+2*K*N+4*M*N+1024)
	defer dev.Close()
	lt.SetAlgos(3, []float64{3, 1, 2})
	r := rand.New(rand.NewPCG(13, 14))
	a, b := uploadRoundedBF16(t, dev, randn(r, M*K)), uploadRoundedBF16(t, dev, randn(r, K*N))
	c0 := randn(r, M*N)
	c := upload(t, dev, c0)
	if err := dev.MatmulBF16Lt(c, a, b, nil, M, N, K, false, false, 1); err != nil {
		t.Fatal(err)
	}
	if runs := lt.Runs(); len(runs) != 1 || runs[0] != (cudafake.LtRun{Algo: 0, InPlace: true}) || dev.LtTuned() != 0 {
		t.Errorf("runs %+v, %d shapes tuned; want algorithm 0 alone, untimed", runs, dev.LtTuned())
	}
	got := download(t, c)
	// The same product through cublasGemmEx (algorithm 0's bits) from c0.
	if err := c.Upload(c0); err != nil {
		t.Fatal(err)
	}
	if err := dev.MatmulBF16(c, a, b, M, N, K, false, false, 1); err != nil {
		t.Fatal(err)
	}
	if want := download(t, c); !sameBits(got, want) {
		t.Error("the untimed product differs from cublasGemmEx's")
	}
}

// TestMatmulBF16LtAutotunePlanBound: with the autotune on, past the plan
// bound every plan is dropped; a shape planned again gets the algorithm
// chosen for it before without timing it again (each of the five shapes
// is timed once over two rounds), and the same bits in both rounds;
// descriptors and events stay bounded.
func TestMatmulBF16LtAutotunePlanBound(t *testing.T) {
	dev, drv, lt := openFakeLtDrv(t, 0)
	dev.SetLtMaxPlans(2)
	r := rand.New(rand.NewPCG(15, 16))
	const C, OC = 40, 8
	w := uploadRoundedBF16(t, dev, randn(r, OC*C))
	peak := 0
	xs := make([][]float32, 6)
	for N := 1; N <= 5; N++ {
		xs[N] = randn(r, N*C)
	}
	first := make([][]float32, 6)
	for round := range 2 {
		for N := 1; N <= 5; N++ {
			// The costs change between the rounds: a shape timed again
			// would keep algorithm 2 in the second.
			lt.SetAlgos(3, [][]float64{{2, 1, 3}, {2, 3, 1}}[round])
			x := uploadRoundedBF16(t, dev, xs[N])
			c := upload(t, dev, make([]float32, N*OC))
			var outs [2][]float32
			for call := range 2 {
				if err := dev.MatmulBF16Lt(c, x, w, nil, N, OC, C, false, true, 0); err != nil {
					t.Fatalf("round %d N=%d: %v", round, N, err)
				}
				outs[call] = download(t, c)
			}
			if !sameBits(outs[0], outs[1]) {
				t.Errorf("round %d N=%d: first and second call differ in bits", round, N)
			}
			if round == 0 {
				first[N] = outs[0]
			} else if !sameBits(outs[0], first[N]) {
				t.Errorf("N=%d: planned again past the bound, the product's bits changed", N)
			}
			if runs := lt.Runs(); runs[len(runs)-1].Algo != 1 {
				t.Errorf("round %d N=%d: the product ran algorithm %d, want 1 (chosen in round 0)", round, N, runs[len(runs)-1].Algo)
			}
			if n := dev.LtPlans(); n > 2 {
				t.Fatalf("%d plans held, bound 2", n)
			}
			peak = max(peak, lt.Live())
			for _, b := range []*cuda.Buffer{x, c} {
				if err := b.Free(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if peak > 1+2*4 {
		t.Errorf("%d cuBLASLt objects live at the peak, want at most 9", peak)
	}
	if n := dev.LtTuned(); n != 5 {
		t.Errorf("%d shapes timed for 5 shapes cycling twice past a bound of 2, want 5", n)
	}
	if h := dev.LtHeuristicCalls(); h != 10 {
		t.Errorf("%d heuristic calls, want 10 (every plan made again asks again)", h)
	}
	if n := drv.Events(); n != 0 {
		t.Errorf("%d events left", n)
	}
	if err := w.Free(); err != nil {
		t.Fatal(err)
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	if n := lt.Live(); n != 0 {
		t.Errorf("%d cuBLASLt objects left after Close", n)
	}
}

// ltLibHooks binds the C stand-in cuBLASLt's test hooks
// (clib/fake_cublaslt.c): setAlgos makes its heuristic offer n algorithms
// with the costs given on the clock of the driver at driver, unsupported
// a bit mask; runs returns the products run (algorithm·2, +1 out of place).
func ltLibHooks(t *testing.T, lib string) (setAlgos func(n int, cost []float64, unsupported uint32, driver string), runs func() []int) {
	t.Helper()
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	var set func(n int32, cost *float64, ncost int32, unsupported uint32, driver string) int32
	var get func(out *int32, n int32) int32
	purego.RegisterLibFunc(&set, h, "hone_fake_cublaslt_set_algos")
	purego.RegisterLibFunc(&get, h, "hone_fake_cublaslt_runs")
	setAlgos = func(n int, cost []float64, unsupported uint32, driver string) {
		t.Helper()
		var p *float64
		if len(cost) > 0 {
			p = &cost[0]
		}
		if set(int32(n), p, int32(len(cost)), unsupported, driver) != 0 {
			t.Fatalf("hone_fake_cublaslt_set_algos(%d, %v, %#x, %q) failed", n, cost, unsupported, driver)
		}
	}
	runs = func() []int {
		buf := make([]int32, 4096)
		n := get(&buf[0], int32(len(buf)))
		out := make([]int, min(int(n), len(buf)))
		for i := range out {
			out[i] = int(buf[i])
		}
		return out
	}
	return setAlgos, runs
}

// autotuneThroughLoader is TestMatmulBF16LtAutotune's check on the C
// stand-ins that libs names, opened through the real loader: four
// algorithms costing 3, 1, 2 and 5 ms on the driver's clock, one refusing
// (NOT_SUPPORTED); the first call keeps algorithm 1 with its own bits
// (those of the second call, not cublasGemmEx's), beta 0 timing in place
// and beta 1 out of place.
func autotuneThroughLoader(t *testing.T, libs cudafake.Libs) {
	t.Helper()
	setAlgos, runs := ltLibHooks(t, libs.BLASLt)
	dev, err := cuda.Open(cuda.Options{DriverLib: libs.Driver, BLASLib: libs.BLAS, BLASLtLib: libs.BLASLt})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	const M, N, K = 6, 5, 96
	r := rand.New(rand.NewPCG(17, 18))
	a, b := uploadRoundedBF16(t, dev, randn(r, M*K)), uploadRoundedBF16(t, dev, randn(r, K*N))
	ws, err := dev.Alloc(1 << 18)
	if err != nil {
		t.Fatal(err)
	}
	for _, beta := range []float32{0, 1} {
		setAlgos(5, []float64{3, 1, 2, 5, 0.5}, 1<<4, libs.Driver)
		// Another transpose per beta: a new shape, planned afresh.
		transB := beta == 0
		c0 := randn(r, M*N)
		cx, cl := upload(t, dev, c0), upload(t, dev, c0)
		if err := dev.MatmulBF16(cx, a, b, M, N, K, false, transB, beta); err != nil {
			t.Fatal(err)
		}
		var outs [2][]float32
		for call := range 2 {
			if err := cl.Upload(c0); err != nil {
				t.Fatal(err)
			}
			if err := dev.MatmulBF16Lt(cl, a, b, ws, M, N, K, false, transB, beta); err != nil {
				t.Fatalf("beta=%g call %d: %v", beta, call, err)
			}
			outs[call] = download(t, cl)
		}
		gemmEx := download(t, cx)
		if !sameBits(outs[0], outs[1]) {
			t.Errorf("beta=%g: the first call (autotuned) and the second (its plan) differ in bits", beta)
		}
		if sameBits(outs[0], gemmEx) {
			t.Fatalf("beta=%g: algorithm 1 gave algorithm 0's bits: the test cannot tell them apart", beta)
		}
		near(t, "autotuned vs GemmEx", outs[0], gemmEx, 1e-5)
		got := runs()
		var want []int
		for algo := range 4 { // algorithm 4 refuses: no run
			for range 4 {
				want = append(want, 2*algo+map[bool]int{true: 0, false: 1}[beta == 0])
			}
		}
		want = append(want, 2, 2) // algorithm 1 in place: the first call's own run, then the second call's
		if !slices.Equal(got, want) {
			t.Errorf("beta=%g: runs %v, want %v", beta, got, want)
		}
		for _, x := range []*cuda.Buffer{cx, cl} {
			if err := x.Free(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := dev.LtTuned(); n != 2 {
		t.Errorf("%d shapes tuned, want 2", n)
	}
	for _, x := range []*cuda.Buffer{a, b, ws} {
		if err := x.Free(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMatmulBF16LtAutotuneThroughLoader runs autotuneThroughLoader on the
// C stand-ins for libcuda (its events on a clock that only the products
// move) and libcublasLt; every event and the beta 1 temporary are freed
// (the fake libcuda counts them as allocations).
func TestMatmulBF16LtAutotuneThroughLoader(t *testing.T) {
	libs := fakeLibs(t)
	_, live := fakeHooks(t, libs.Driver)
	autotuneThroughLoader(t, libs)
	if n := live(); n != 0 {
		t.Errorf("%d allocations or events left in the fake driver", n)
	}
}

// TestMatmulBF16LtAutotuneEmulatedDeferred runs autotuneThroughLoader on
// the emulating libcuda in its deferred mode (HONE_FAKE_CUDA_DEFERRED):
// the products, the clock's steps and the events' records only queue, and
// cuEventSynchronize runs them; the choice and the bits are the same.
func TestMatmulBF16LtAutotuneEmulatedDeferred(t *testing.T) {
	cc, cxx := os.Getenv("CC"), os.Getenv("CXX")
	if cc == "" {
		cc = "gcc" // as cgo
	}
	if cxx == "" {
		cxx = "g++"
	}
	libs, err := cudafake.BuildEmulatingLibs(context.Background(), cc, cxx, ".", t.TempDir())
	if errors.Is(err, exec.ErrNotFound) && os.Getenv("CI") == "" {
		t.Skipf("no compiler for the emulating CUDA libraries: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HONE_FAKE_CUDA_DEFERRED", libs.Driver) // read by cuInit and cublasLtCreate
	autotuneThroughLoader(t, libs)
}

// TestMatmulBF16LtAutotuneAcrossProcesses is what SetLtAutotune documents
// for a resume: two devices (a run and its resume, each timing afresh)
// whose timings differ — noise on a GPU, two cost tables here — keep
// different algorithms for the same shape and give different bits; with
// the same timings they agree; handed the first run's choices
// (LtChoices, SetLtChoices) the other device keeps them untimed and gives
// the first run's bits, unless its heuristic no longer offers the
// recorded algorithm (then it times afresh); with the autotune off both
// keep the heuristic's first and agree whatever the timings.
func TestMatmulBF16LtAutotuneAcrossProcesses(t *testing.T) {
	const M, N, K = 6, 5, 96
	r := rand.New(rand.NewPCG(19, 20))
	ha, hb := randn(r, M*K), randn(r, K*N)
	type result struct {
		out     []float32
		choices []cuda.LtChoice
		tuned   int
	}
	product := func(cost []float64, tune int, choices []cuda.LtChoice) result {
		dev, _, lt := openFakeLtDrv(t, 0)
		defer dev.Close()
		lt.SetAlgos(3, cost)
		if tune > 0 {
			dev.SetLtAutotune(tune)
		}
		if err := dev.SetLtChoices(choices); err != nil {
			t.Fatal(err)
		}
		a, b := uploadRoundedBF16(t, dev, ha), uploadRoundedBF16(t, dev, hb)
		c := upload(t, dev, make([]float32, M*N))
		if err := dev.MatmulBF16Lt(c, a, b, nil, M, N, K, false, true, 0); err != nil {
			t.Fatal(err)
		}
		return result{download(t, c), dev.LtChoices(), dev.LtTuned()}
	}
	run := product([]float64{3, 1, 2}, 0, nil)
	resumed, again := product([]float64{3, 2, 1}, 0, nil), product([]float64{3, 1, 2}, 0, nil)
	if sameBits(run.out, resumed.out) {
		t.Error("algorithms 1 and 2, kept by two timings, gave the same bits: the test cannot show the difference")
	}
	if !sameBits(run.out, again.out) {
		t.Error("the same timings kept different bits")
	}
	if len(run.choices) != 1 || run.choices[0].Rank != 1 || run.choices[0].M != N || run.choices[0].N != M {
		t.Fatalf("choices %+v, want one of rank 1 for the 5×6×96 column-major shape", run.choices)
	}
	// Through JSON, as a checkpoint would keep them.
	js, err := json.Marshal(run.choices)
	if err != nil {
		t.Fatal(err)
	}
	var saved []cuda.LtChoice
	if err := json.Unmarshal(js, &saved); err != nil {
		t.Fatal(err)
	}
	if handed := product([]float64{3, 2, 1}, 0, saved); !sameBits(handed.out, run.out) || handed.tuned != 0 {
		t.Errorf("handed the first run's choices: same bits %v, %d shapes timed; want the first run's bits, none timed", sameBits(handed.out, run.out), handed.tuned)
	}
	stale := slices.Clone(run.choices)
	stale[0].Algo.Data[3]++ // another library's algorithm
	if handed := product([]float64{3, 2, 1}, 0, stale); !sameBits(handed.out, resumed.out) || handed.tuned != 1 {
		t.Errorf("handed a choice the heuristic does not offer: %d shapes timed, want 1 and the new timing's bits", handed.tuned)
	}
	if off1, off2 := product([]float64{3, 1, 2}, 1, nil), product([]float64{3, 2, 1}, 1, nil); !sameBits(off1.out, off2.out) {
		t.Error("with the autotune off, two timings gave different bits")
	}
}

// TestMatmulBF16LtAutotuneBF16C: a product storing a bfloat16 C (mm.CBF16,
// the dact and gate/up products under GEMMCublasLt) is autotuned as a
// float32 one is, with beta 1 on a temporary D of C's type: on a device
// with room for a bfloat16 copy of C but not a float32 one, the
// candidates are timed (3 × 4 runs out of place), algorithm 1 is kept,
// and the product (C's old values added, rounded once) is the one its
// plan gives again and near cublasGemmEx's; the temporary is freed.
func TestMatmulBF16LtAutotuneBF16C(t *testing.T) {
	const M, N, K = 64, 64, 8
	// a and b (1 KiB each) and two bfloat16 Cs (8 KiB each) fit, with 1 KiB
	// to spare; a float32 temporary (16 KiB) beside them would not.
	dev, drv, lt := openFakeLtDrv(t, 2*M*K+2*K*N+2*(2*M*N)+1024)
	defer dev.Close()
	lt.SetAlgos(3, []float64{3, 1, 2})
	r := rand.New(rand.NewPCG(15, 16))
	a, b := uploadRoundedBF16(t, dev, randn(r, M*K)), uploadRoundedBF16(t, dev, randn(r, K*N))
	c0 := randn(r, M*N)
	c := uploadRoundedBF16(t, dev, c0)
	packed := download(t, c)
	liveBefore, _ := drv.Live()
	var outs [2][]float32
	for call := range 2 {
		if err := c.Upload(packed); err != nil {
			t.Fatal(err)
		}
		g := cuda.Mm{C: c, A: a, B: b, M: M, N: N, K: K, Beta: 1, BF16: true, CBF16: true, Lt: true}
		if err := dev.GemmRows(g); err != nil {
			t.Fatalf("call %d: %v", call, err)
		}
		outs[call] = download(t, c)
	}
	if n := dev.LtTuned(); n != 1 {
		t.Fatalf("%d shapes tuned, want 1 (runs %+v)", n, lt.Runs())
	}
	runs := lt.Runs()
	if len(runs) != 14 {
		t.Fatalf("%d cublasLtMatmul runs, want 14: %+v", len(runs), runs)
	}
	for i, run := range runs[:12] {
		if want := (cudafake.LtRun{Algo: i / 4, InPlace: false}); run != want {
			t.Errorf("timing run %d is %+v, want %+v", i, run, want)
		}
	}
	for _, run := range runs[12:] {
		if want := (cudafake.LtRun{Algo: 1, InPlace: true}); run != want {
			t.Errorf("the product's own run is %+v, want %+v", run, want)
		}
	}
	if !sameBits(outs[0], outs[1]) {
		t.Error("the first call (autotuned) and the second (its plan) differ in bits")
	}
	if n, _ := drv.Live(); n != liveBefore {
		t.Errorf("%d allocations after the calls, %d before (the temporary D left)", n, liveBefore)
	}
	// cublasGemmEx on the same operands (algorithm 0: other K sums).
	if err := c.Upload(packed); err != nil {
		t.Fatal(err)
	}
	if err := dev.GemmRows(cuda.Mm{C: c, A: a, B: b, M: M, N: N, K: K, Beta: 1, BF16: true, CBF16: true}); err != nil {
		t.Fatal(err)
	}
	near(t, "autotuned vs GemmEx, bfloat16 C", unpackBF16(outs[0], M*N), unpackBF16(download(t, c), M*N), ltTolBF16C)
}

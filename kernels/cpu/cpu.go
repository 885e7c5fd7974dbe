package cpu

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hone-rl/hone/kernels"
)

// Options configure a CPU backend. The zero value picks the defaults.
type Options struct {
	// Workers is the number of goroutines for element-wise ops (the calling
	// goroutine counts as one). 0 means runtime.GOMAXPROCS(0).
	Workers int
	// MinParallel is the amount of work (roughly, values touched) below which
	// an op runs on the calling goroutine alone. 0 means 32768; tests set 1 to
	// exercise the parallel paths on small shapes.
	MinParallel int
	// GEMM selects the matrix product: "" (the first available of avx512,
	// openblas, gonum), "avx512" (built-in, single-threaded, cgo and an
	// AVX-512F CPU), "openblas" or "gonum".
	GEMM string
	// LogprobRows caps the rows of one logits block in LogprobForward and
	// LogprobBackward (scratch = LogprobRows × chunk floats). 0 means 512.
	LogprobRows int
	// SplitGEMM says whether large matrix products are split into blocks
	// computed concurrently by the workers, each a single-threaded BLAS call:
	// 0 (auto) splits for avx512 and for OpenBLAS running one thread
	// (OPENBLAS_NUM_THREADS=1), which otherwise leaves all but one core idle
	// in every product; 1 always splits; −1 never does (a multi-threaded
	// OpenBLAS, or gonum, parallelises inside the call). The bfloat16 GEMM
	// of the bf16 compute mode is single-threaded C: it splits unless −1.
	SplitGEMM int
	// Compute is the precision of the products on frozen bfloat16 weights
	// (kernels.Precision): PrecisionF32 (the zero value, exact) or
	// PrecisionBF16, which rounds the activation to bfloat16 and runs the
	// bfloat16 GEMM (LinearForwardBF16 from bf16MinRows rows, and
	// LinearBackwardBF16). New refuses PrecisionBF16 on a CPU without
	// AVX512-BF16 unless BF16Kernel is "portable".
	Compute kernels.Precision
	// BF16Kernel picks the bfloat16 GEMM's micro-kernel: "" (the best this
	// CPU has: AMX, else AVX512-BF16; one of them is needed), "amx" (AMX-BF16
	// tiles, tdpbf16ps: Intel Sapphire Rapids and later, on Linux 5.16+),
	// "avx512bf16" (vdpbf16ps), or "portable" (the same packing and blocking
	// with the arithmetic in plain C: any CPU, several times slower than
	// float32 — for tests and for checking the mode's numerics). The decode
	// form (8–64 rows) is AVX512-BF16, except when BF16Kernel is "amx" in so
	// many words and the width is a multiple of 32: then AMX, the weight read
	// in place. That decode kernel is checked on an emulated tile unit only,
	// not yet on AMX hardware, so the best-the-CPU-has choice ("") leaves it
	// out.
	BF16Kernel string
}

// SpareProc makes GOMAXPROCS exceed the number of kernel workers by one,
// raising it if needed, and returns the workers to pass as Options.Workers
// (workers ≤ 0 means the current GOMAXPROCS). Call it once, from main, before
// New: GOMAXPROCS belongs to the process.
//
// Why: every part of a kernel is a cgo call of tens of microseconds or more.
// The Go runtime takes the P away from a goroutine that stays in a cgo call
// past a sysmon tick, and when no other P is idle it starts a spinning thread
// to hold it, which finds nothing to do and parks again: with one worker per
// core that is a thread wake-up and park per kernel part. With one spare P
// the taken P simply idles until the call returns. Measured on AMD Zen 4 (2
// cores, modelbench worker decode on the 0.5B shape, 2 workers): 64 batch-1
// f32 steps made 55,000 context switches at GOMAXPROCS 2 and 17,000–20,000
// at 3 or 4; tokens/s rose by about a tenth at batch 1 and a fifth at batch 8.
func SpareProc(workers int) int {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if runtime.GOMAXPROCS(0) <= workers {
		runtime.GOMAXPROCS(workers + 1)
	}
	return workers
}

// Backend is the CPU backend. Create it with New; it is safe for concurrent
// use; Close stops its workers.
type Backend struct {
	name        string
	feat        features     // what this CPU offers the C kernels
	vec         vecKernels   // vectorised element-wise loops; nil fields: the Go loops
	gemm        sgemmFunc    // the GEMM Options.GEMM picked
	gemmB16     sgemmB16Func // the same GEMM reading a bfloat16 B; nil: widen B first
	prec        kernels.Precision
	bgemm       bgemmFunc    // the bfloat16 GEMM when prec is PrecisionBF16, else nil
	brows       bf16RowsFunc // its decode form (few rows), likewise
	bkind       bf16Kind     // bgemm's micro-kernel
	amxRows     bool         // the decode form on AMX (BF16Kernel "amx" only)
	splitB16    bool         // bgemm's products are split over the workers (single-threaded C, like avx512)
	splitGEMM   bool         // see Options.SplitGEMM
	pool        *pool
	minParallel int
	lpRows      int
	scratch     sync.Pool // of *[]float32, see buf
}

var _ kernels.Backend = (*Backend)(nil)

// features is what the CPU offers the C kernels. New detects it, and the
// backend carries it with the kernels it picked: no package state decides
// what a backend runs, so Options alone choose among what the CPU offers.
type features struct {
	avx512 bool // AVX-512F: the built-in GEMM and the vectorised element-wise loops
	gemv   int  // matrix-vector kernels: 1 AVX2 + FMA, 0 plain
	rows   int  // rows kernels: 2 AVX-512 (F, BW, VL, DQ), 1 AVX2 + FMA, 0 plain
	bf16   bool // AVX512-BF16 (with F and BW): the native bfloat16 GEMM
	amx    bool // AMX-TILE, AMX-BF16 and AVX512-BF16, tile state granted: the AMX bfloat16 GEMM
}

// bf16Kind is a micro-kernel of the bfloat16 GEMM (the C side's kind).
type bf16Kind int

const (
	bf16Portable bf16Kind = iota // plain C, any CPU
	bf16Native                   // AVX512-BF16, vdpbf16ps
	bf16AMX                      // AMX-BF16 tiles, tdpbf16ps
)

// detect reads the CPU's instruction sets (a few cpuid queries; all zero
// without cgo, where every kernel is Go).
func detect() features {
	return features{avx512: hasAVX512(), gemv: gemvLevel(), rows: rowsLevel(), bf16: hasAVX512BF16(), amx: hasAMX()}
}

// vecKernels are the vectorised forms of the exp-heavy element-wise loops
// and of RMSNorm's rows; a nil field means the Go loop runs instead.
type vecKernels struct {
	swigluFwd   func(out, gate, up []float32)
	swigluBwd   func(dgate, dup, dout, gate, up []float32)
	rowMax      func(x []float32) float32
	expSums     func(x []float32, mu float32) (s, t float64)
	logprobGrad func(row []float32, l, dl, de, H float32)
	expShift    func(dst, x []float32, mu, scale float32) float64
	// RMSNorm rows (len(rstd) of them, C values each), as
	// RMSNormForward's and RMSNormBackward's dinp loops.
	rmsFwd func(out, rstd, x, w []float32, C int, eps float32)
	rmsBwd func(dinp, dout, rstd, x, w []float32, C int)
}

// New returns a CPU backend configured by o, using what this CPU offers.
func New(o Options) (*Backend, error) {
	feat := detect()
	gemm, gemmB16, name, err := pickGEMM(o.GEMM, feat)
	if err != nil {
		return nil, err
	}
	bgemm, brows, bkind, suffix, err := pickBF16(o.Compute, o.BF16Kernel, feat)
	if err != nil {
		return nil, err
	}
	w := o.Workers
	if w <= 0 {
		w = runtime.GOMAXPROCS(0)
	}
	mp := o.MinParallel
	if mp <= 0 {
		mp = 32768
	}
	lr := o.LogprobRows
	if lr <= 0 {
		lr = 512
	}
	split := false
	switch {
	case o.SplitGEMM > 0:
		split = true
	case o.SplitGEMM == 0:
		split = name == "avx512" || name == "openblas" && openblasThreads() == 1
	}
	split = split && w > 1
	var vec vecKernels
	if feat.avx512 {
		vec = avx512Vec()
	}
	return &Backend{name: "cpu/" + name + suffix, feat: feat, vec: vec, gemm: gemm, gemmB16: gemmB16, splitGEMM: split,
		prec: o.Compute, bgemm: bgemm, brows: brows, bkind: bkind, amxRows: bkind == bf16AMX && o.BF16Kernel == "amx", splitB16: w > 1 && o.SplitGEMM >= 0, pool: newPool(w), minParallel: mp, lpRows: lr}, nil
}

// NoBF16Error is New's error for the bf16 compute mode on a CPU (or a
// build) without AVX512-BF16; hone-train and hone-serve exit 2 on it (find
// it with errors.As).
type NoBF16Error struct{}

func (NoBF16Error) Error() string {
	return "cpu: --compute bf16 needs a CPU with AVX512-BF16 (avx512_bf16 in /proc/cpuinfo: AMD Zen 4 or later, Intel Cooper Lake / Sapphire Rapids or later) and a cgo build: this CPU or binary lacks it; use --compute f32"
}

// pickBF16 resolves Options.Compute and Options.BF16Kernel: the bfloat16
// GEMM and its decode form (nil for PrecisionF32), the GEMM's micro-kernel,
// and the suffix they add to the backend's name ("+bf16amx", "+bf16" for
// AVX512-BF16, "+bf16portable").
func pickBF16(p kernels.Precision, kernel string, f features) (bgemmFunc, bf16RowsFunc, bf16Kind, string, error) {
	switch p {
	case kernels.PrecisionF32:
		return nil, nil, bf16Portable, "", nil
	case kernels.PrecisionBF16:
	default:
		return nil, nil, bf16Portable, "", fmt.Errorf("cpu: unknown compute precision %v", p)
	}
	switch kernel {
	case "":
		if f.amx {
			return bf16GEMM(bf16AMX), bf16RowsKernel(true), bf16AMX, "+bf16amx", nil
		}
		fallthrough
	case "avx512bf16":
		if !f.bf16 {
			return nil, nil, bf16Portable, "", NoBF16Error{}
		}
		return bf16GEMM(bf16Native), bf16RowsKernel(true), bf16Native, "+bf16", nil
	case "amx":
		if !f.amx {
			return nil, nil, bf16Portable, "", fmt.Errorf("cpu: bfloat16 kernel \"amx\" needs a CPU with AMX-TILE, AMX-BF16 and AVX512-BF16 (amx_tile, amx_bf16 and avx512_bf16 in /proc/cpuinfo: Intel Sapphire Rapids or later), Linux 5.16 or later (which grants the tile state) and a cgo build: this CPU, kernel or binary lacks it")
		}
		return bf16GEMM(bf16AMX), bf16RowsKernel(true), bf16AMX, "+bf16amx", nil
	case "portable":
		g := bf16GEMM(bf16Portable)
		if g == nil {
			return nil, nil, bf16Portable, "", fmt.Errorf("cpu: the portable bfloat16 GEMM is C: this binary was built with CGO_ENABLED=0")
		}
		return g, bf16RowsKernel(false), bf16Portable, "+bf16portable", nil
	}
	return nil, nil, bf16Portable, "", fmt.Errorf("cpu: unknown bfloat16 kernel %q (want \"\", amx, avx512bf16 or portable)", kernel)
}

// Precision returns the compute precision the backend was made with.
func (b *Backend) Precision() kernels.Precision { return b.prec }

// pickGEMM resolves Options.GEMM against what the CPU offers, returning the
// GEMM, its bfloat16-B form (nil when it has none) and its name. The default
// prefers the built-in AVX-512 kernel: OpenBLAS 0.3.21's runtime detection
// falls back to SSE3 kernels on CPUs newer than itself, several times slower.
func pickGEMM(which string, f features) (sgemmFunc, sgemmB16Func, string, error) {
	switch which {
	case "":
		if f.avx512 {
			g, g16 := avx512GEMM()
			return g, g16, "avx512", nil
		}
		if g := openblasGEMM(); g != nil {
			return g, nil, "openblas", nil
		}
		return gonumSgemm, nil, "gonum", nil
	case "avx512":
		if !f.avx512 {
			return nil, nil, "", fmt.Errorf("cpu: GEMM %q needs a cgo build on a CPU with AVX-512F", which)
		}
		g, g16 := avx512GEMM()
		return g, g16, "avx512", nil
	case "openblas":
		g := openblasGEMM()
		if g == nil {
			return nil, nil, "", fmt.Errorf("cpu: GEMM %q needs a cgo build linked with -lopenblas (this binary was built with CGO_ENABLED=0)", which)
		}
		return g, nil, "openblas", nil
	case "gonum":
		return gonumSgemm, nil, "gonum", nil
	}
	return nil, nil, "", fmt.Errorf("cpu: unknown GEMM %q (want avx512, openblas or gonum)", which)
}

// Name returns "cpu/avx512", "cpu/openblas" or "cpu/gonum", with "+bf16amx",
// "+bf16" (AVX512-BF16) or "+bf16portable" in the bf16 compute mode.
func (b *Backend) Name() string { return b.name }

// Close stops the worker goroutines. Ops must not be called afterwards.
func (b *Backend) Close() error {
	b.pool.close()
	return nil
}

// buf returns a scratch buffer of n floats with undefined contents, reused
// across calls so that hot ops neither allocate nor page-fault fresh memory
// each time; give it back with release. Safe for concurrent use.
func (b *Backend) buf(n int) *[]float32 {
	if v, ok := b.scratch.Get().(*[]float32); ok && cap(*v) >= n {
		*v = (*v)[:n]
		return v
	}
	s := make([]float32, n)
	return &s
}

func (b *Backend) release(v *[]float32) { b.scratch.Put(v) }

// pool runs parts of a loop on long-lived workers.
type pool struct {
	workers int
	tasks   chan func()
	once    sync.Once
}

func newPool(workers int) *pool {
	p := &pool{workers: workers, tasks: make(chan func(), 4*workers)}
	for i := 1; i < workers; i++ {
		go func() {
			for {
				f, ok := p.next()
				if !ok {
					return
				}
				f()
			}
		}()
	}
	return p
}

// workerSpin is how long an idle worker polls for the next part before it
// parks. Waking a parked thread on a virtual machine means waking its idle
// vCPU, which took from tens of microseconds to over a millisecond here, and
// a decode step is a chain of ~190 parallel ops of about half a millisecond
// each: a worker that parks between them starts most of them late.
const workerSpin = 200 * time.Microsecond

// next returns the next task, polling for workerSpin before it blocks;
// ok is false once the pool is closed.
func (p *pool) next() (f func(), ok bool) {
	for deadline := time.Now().Add(workerSpin); time.Now().Before(deadline); {
		select {
		case f, ok = <-p.tasks:
			return f, ok
		default:
		}
	}
	f, ok = <-p.tasks
	return f, ok
}

func (p *pool) close() { p.once.Do(func() { close(p.tasks) }) }

// parallel runs fn over [0, n) split into contiguous parts when n·cost
// (work per item) reaches the backend's threshold; otherwise on the calling
// goroutine. Parts are claimed from a shared counter by the caller and by
// the workers it wakes, so the caller never waits for a worker that has not
// started yet (on a busy machine a wake-up can take longer than the work):
// it only waits for parts a worker has already claimed. A helper that cannot
// be queued is simply not sent, so nested or concurrent calls never deadlock.
func (b *Backend) parallel(n, cost int, fn func(lo, hi int)) {
	w := b.pool.workers
	if n <= 0 {
		return
	}
	if w <= 1 || n < 2 || n*cost < b.minParallel {
		fn(0, n)
		return
	}
	b.split(n, min(n, 4*w), fn)
}

// split runs fn over [0, n) cut into parts contiguous pieces, claimed as
// parallel describes.
func (b *Backend) split(n, parts int, fn func(lo, hi int)) {
	w := b.pool.workers
	if parts <= 1 || w <= 1 {
		fn(0, n)
		return
	}
	var next, done atomic.Int64
	var wg sync.WaitGroup
	wg.Add(parts)
	run := func() {
		for {
			i := int(next.Add(1)) - 1
			if i >= parts {
				return
			}
			fn(i*n/parts, (i+1)*n/parts)
			done.Add(1)
			wg.Done()
		}
	}
	for i := 1; i < w; i++ {
		select {
		case b.pool.tasks <- run:
		default:
		}
	}
	run()
	// Poll before blocking, for the reason workerSpin gives: a caller that
	// parks here is woken as late as a parked worker.
	for deadline := time.Now().Add(workerSpin); done.Load() < int64(parts) && time.Now().Before(deadline); {
	}
	wg.Wait()
}

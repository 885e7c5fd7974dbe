package cuda

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// GEMMs through cuBLASLt (issue #28 asks for bindings to it beside
// cuBLAS): cublasLtMatmul with an algorithm from
// cublasLtMatmulAlgoGetHeuristic and a workspace, on the same column-major
// arguments as the cublasGemmEx path (gemmRows maps the row-major product
// the same way for both). cuBLASLt lets the caller hand it a workspace
// and pick among the heuristic's algorithms; cublasGemmEx picks with no
// workspace of the caller's. The plan of a new shape times the
// heuristic's first candidates on the call's own operands and keeps the
// fastest (tune; Device.SetLtAutotune), as PyTorch's and others' cuBLASLt
// paths do. Whether that is faster on the 7B step's base GEMMs is for
// TestGemmLtOnHardware to say; until it has run on a GPU cublasGemmEx
// stays the default (Ops.SetGEMMLibrary). None of this has run on a GPU
// yet.

// LtWorkspaceBytes is the workspace Ops hands cublasLtMatmul (a scratch
// slot, scratch.go): 32 MiB, the size cuBLAS itself reserves for its
// workspace on Hopper devices (the cuBLAS documentation's "cuBLAS
// Workspace" section; 4 MiB on older ones), so that the heuristic may
// offer the split-K and stream-K algorithms cublasGemmEx can use there.
const LtWorkspaceBytes = 32 << 20

// ltMaxPlans bounds the plans a device keeps: the packed token count N
// changes from batch to batch in training, and each N is a shape of its
// own, so an unbounded cache would grow for the whole run. Past the bound
// every plan is dropped and the next calls plan again (one heuristic call
// each, microseconds against a GEMM on the 7B shapes).
const ltMaxPlans = 256

// LtAutotuneCandidates is how many of the heuristic's algorithms the
// autotune times for a new shape by default (Device.SetLtAutotune): the
// heuristic's best eight, what PyTorch's and others' cuBLASLt autotuning
// settle for.
const LtAutotuneCandidates = 8

// ltTuneReps is how many timed runs of each candidate follow its warm-up
// run: a few, because each is a whole GEMM of the step (hundreds of
// microseconds on the 7B shapes), well above the events' half-microsecond
// resolution.
const ltTuneReps = 3

// ltState is a device's cuBLASLt: the library and handle once UseBLASLt
// ran, or why it could not be loaded, and the plan of each GEMM shape run
// so far.
type ltState struct {
	lib     BLASLt
	handle  LtHandle
	missing error // LoadBLASLt's error when Options.BLASLt asked for it and it is absent
	plans   map[ltKey]*ltPlan
	// heuristics counts cublasLtMatmulAlgoGetHeuristic calls (tests).
	heuristics int
	maxPlans   int // ltMaxPlans when 0 (tests set less)
	// tune is how many heuristic candidates a new shape's plan times
	// (SetLtAutotune): LtAutotuneCandidates when 0, none (the heuristic's
	// first) when 1.
	tune int
	// tuned counts the shapes whose candidates were timed (LtTuned).
	tuned int
	// chosen is the algorithm each shape's plan kept and its rank in the
	// heuristic's list, remembered past the plan bound (some hundred bytes
	// a shape, at most ltMaxChoices): a shape planned again gets the same
	// algorithm, untimed — the heuristic gives the same list for the same
	// key — so within a process a shape's bits never change, and its
	// timing is paid once. SetLtChoices fills it from another process.
	chosen map[ltKey]ltChoice
}

// ltChoice is one shape's kept algorithm and its rank in the heuristic's
// list.
type ltChoice struct {
	rank int
	algo LtAlgo
}

// ltMaxChoices bounds the shapes whose choice a device remembers (past it
// the memory starts afresh, and shapes are timed again).
const ltMaxChoices = 1 << 16

// ltKey is what the heuristic's choice depends on: the operations, sizes,
// leading dimensions, types, the operands' alignment and the workspace.
type ltKey struct {
	ta, tb                 Op
	m, n, k, lda, ldb, ldc int
	t                      GemmTypes
	alignA, alignB, alignC uint32
	ws                     int
	tune                   int // the candidates timed (1: none), so that plans with and without the autotune stay apart
}

// ltPlan is one shape's descriptors and algorithm, kept until Close.
type ltPlan struct {
	desc    LtMatmulDesc
	a, b, c LtLayout
	algo    LtAlgo
	ws      int // the workspace the algorithm needs
	rank    int // the algorithm's place in the heuristic's list (0: its first)
}

// UseBLASLt binds cuBLASLt to the device: a cublasLtCreate handle in its
// context, destroyed by Close. Open calls it when Options.BLASLt asks.
func (d *Device) UseBLASLt(lt BLASLt) error {
	return d.do(func() error {
		if d.lt.lib != nil {
			return errors.New("CUDA device: cuBLASLt is bound already")
		}
		h, err := lt.Create()
		if err != nil {
			return fmt.Errorf("CUDA device %d: %w", d.ordinal, err)
		}
		d.lt = ltState{lib: lt, handle: h, plans: map[ltKey]*ltPlan{}, tune: d.lt.tune, chosen: map[ltKey]ltChoice{}}
		return nil
	})
}

// SetLtAutotune sets how many of the heuristic's candidate algorithms
// MatmulBF16Lt times when it plans a new shape, keeping the fastest for
// that shape until Close: LtAutotuneCandidates (8) by default, n ≤ 1 turns
// the autotune off (the heuristic's first algorithm, as before). It
// applies to shapes planned after it; plans made with another setting are
// kept apart (the setting is part of their key).
//
// The one-time cost, per new shape: candidates × (1 + ltTuneReps) runs of
// the GEMM (32 for 8 candidates: tens of milliseconds for a 7B projection
// at 8×1024 tokens, whose GEMMs take 0.1 to 2.5 ms — an estimate, not
// measured) and one wait for the device per candidate (the events), plus,
// when beta ≠ 0, a temporary output the size of C (cuMemAlloc, freed
// after; without the memory for it the shape keeps the heuristic's first
// algorithm untimed). Training packs a different token count into each
// batch, and each count is a shape of its own: runs whose counts vary pay
// it once for every new count.
//
// Reproducibility: two algorithms of cuBLASLt may order the K sums
// differently (split-K, stream-K), so they may give different bits, and
// the timing that picks between them varies from run to run on a GPU.
// Within one process a shape keeps its first choice (the plan, and past
// the plan bound the remembered rank), so every call of it gives the bits
// of the first; two processes — a run and its resume, or two fresh runs —
// may choose differently and differ in the last bits from the first
// product on. Handing a run's choices to another process (LtChoices,
// SetLtChoices) pins the shapes they cover; but a shape first met after a
// checkpoint is timed afresh by the resumed process, independently of
// what the uninterrupted run would have timed, so a resume is bit-identical
// only with the autotune off (n ≤ 1, the commands' default unless
// HONE_CUDA_LT_AUTOTUNE says otherwise) — the heuristic's first choice is a function of the shape,
// the library and the device only — or with a table covering every shape
// the run meets (fixed shapes, or a table saved from a whole earlier run;
// hone-train saves none). cublasGemmEx, the default GEMM library, is
// unaffected.
func (d *Device) SetLtAutotune(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lt.tune = max(1, n)
}

// LtChoice is the algorithm a device's cuBLASLt plan kept for one GEMM
// shape (the column-major arguments, the operands' alignment, the
// workspace and the autotune's candidate count) and its rank in the
// heuristic's list. It is plain data: LtChoices hands a process's choices
// out, and SetLtChoices hands them to another, which then multiplies
// those shapes with the algorithms the first timed and kept, and gives
// their bits (SetLtAutotune says what that does and does not make
// reproducible).
type LtChoice struct {
	TransA, TransB         Op
	M, N, K                int
	LDA, LDB, LDC          int
	Types                  GemmTypes
	AlignA, AlignB, AlignC uint32
	Workspace              int
	Candidates             int // the autotune's setting (1: off)
	Rank                   int
	Algo                   LtAlgo // the heuristic's algorithm at Rank, checked when the choice is used
}

func (c LtChoice) key() ltKey {
	return ltKey{ta: c.TransA, tb: c.TransB, m: c.M, n: c.N, k: c.K, lda: c.LDA, ldb: c.LDB, ldc: c.LDC, t: c.Types,
		alignA: c.AlignA, alignB: c.AlignB, alignC: c.AlignC, ws: c.Workspace, tune: c.Candidates}
}

// LtChoices returns the algorithms kept so far, one per shape, in no
// particular order (at most ltMaxChoices).
func (d *Device) LtChoices() []LtChoice {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]LtChoice, 0, len(d.lt.chosen))
	for k, c := range d.lt.chosen {
		out = append(out, LtChoice{TransA: k.ta, TransB: k.tb, M: k.m, N: k.n, K: k.k, LDA: k.lda, LDB: k.ldb, LDC: k.ldc, Types: k.t,
			AlignA: k.alignA, AlignB: k.alignB, AlignC: k.alignC, Workspace: k.ws, Candidates: k.tune, Rank: c.rank, Algo: c.algo})
	}
	return out
}

// SetLtChoices makes the device keep, for the shapes cs name, the
// algorithms cs say when it plans them (after cuBLASLt is bound), without
// timing: a shape whose heuristic no longer offers the recorded algorithm
// at its rank (another cuBLASLt or device) is timed afresh instead. It
// replaces the choices of those shapes, not plans already made.
func (d *Device) SetLtChoices(cs []LtChoice) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lt.lib == nil {
		return errors.New("CUDA device: SetLtChoices before cuBLASLt is bound (UseBLASLt)")
	}
	for _, c := range cs {
		if c.Rank < 0 {
			return fmt.Errorf("CUDA device: cuBLASLt choice of rank %d", c.Rank)
		}
		if len(d.lt.chosen) >= ltMaxChoices {
			clear(d.lt.chosen)
		}
		d.lt.chosen[c.key()] = ltChoice{rank: c.Rank, algo: c.Algo}
	}
	return nil
}

// LtAutotune returns the candidates the autotune times (1: off).
func (d *Device) LtAutotune() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return cmp.Or(d.lt.tune, LtAutotuneCandidates)
}

// LtTuned returns the number of shapes whose candidates the autotune
// timed so far (shapes with one usable candidate are not timed).
func (d *Device) LtTuned() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lt.tuned
}

// HasBLASLt reports whether cuBLASLt is bound; when it is not, the error
// says why (its *MissingError when Open looked for it and it is absent).
func (d *Device) HasBLASLt() (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lt.lib != nil {
		return true, nil
	}
	if d.lt.missing != nil {
		return false, d.lt.missing
	}
	return false, errors.New("cuBLASLt was not loaded (cuda.Options.BLASLt)")
}

// LtPlans returns the number of GEMM shapes whose plans the device holds
// (at most ltMaxPlans).
func (d *Device) LtPlans() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.lt.plans)
}

// LtHeuristicCalls returns the number of cublasLtMatmulAlgoGetHeuristic
// calls so far: one per GEMM shape (the plans are cached).
func (d *Device) LtHeuristicCalls() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lt.heuristics
}

// closeLt destroys the cached plans and the handle; d.mu is held and the
// context current.
func (d *Device) closeLt() error {
	if d.lt.lib == nil {
		return nil
	}
	var errs []error
	for _, p := range d.lt.plans {
		errs = append(errs, p.destroy(d.lt.lib))
	}
	errs = append(errs, d.lt.lib.Destroy(d.lt.handle))
	d.lt = ltState{heuristics: d.lt.heuristics, tuned: d.lt.tuned, tune: d.lt.tune} // the counts and the setting stay
	return errors.Join(errs...)
}

func (p *ltPlan) destroy(lt BLASLt) error {
	var errs []error
	for _, l := range []LtLayout{p.a, p.b, p.c} {
		if l != 0 {
			errs = append(errs, lt.MatrixLayoutDestroy(l))
		}
	}
	if p.desc != 0 {
		errs = append(errs, lt.MatmulDescDestroy(p.desc))
	}
	return errors.Join(errs...)
}

// align is the largest power of two up to 256 dividing p: what the
// preference's CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES promise.
func align(p DevPtr) uint32 {
	a := uint32(256)
	for a > 1 && uint64(p)%uint64(a) != 0 {
		a /= 2
	}
	return a
}

// opShape is the stored shape (rows, cols) of a column-major operand that
// enters the product as op(X) of r×c.
func opShape(o Op, r, c int) (uint64, uint64) {
	if o == OpT {
		return uint64(c), uint64(r)
	}
	return uint64(r), uint64(c)
}

// plan returns the cached plan of g's shape, making it the first time:
// descriptors, then the heuristic's candidates within the workspace, of
// which the autotune keeps the fastest on g's own operands (tune), or,
// with the autotune off, the heuristic's first. d.mu is held and the
// context current.
func (d *Device) plan(g Gemm, t GemmTypes, ws DevPtr, wsBytes int) (*ltPlan, error) {
	tune := cmp.Or(d.lt.tune, LtAutotuneCandidates)
	k := ltKey{ta: g.TransA, tb: g.TransB, m: g.M, n: g.N, k: g.K, lda: g.LDA, ldb: g.LDB, ldc: g.LDC, t: t,
		alignA: align(g.A), alignB: align(g.B), alignC: align(g.C), ws: wsBytes, tune: tune}
	if p := d.lt.plans[k]; p != nil {
		return p, nil
	}
	lt := d.lt.lib
	if len(d.lt.plans) >= cmp.Or(d.lt.maxPlans, ltMaxPlans) {
		var errs []error
		for pk, p := range d.lt.plans {
			errs = append(errs, p.destroy(lt))
			delete(d.lt.plans, pk)
		}
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
	}
	p := &ltPlan{}
	err := func() error {
		var err error
		if p.desc, err = lt.MatmulDescCreate(t.Compute, R32F); err != nil {
			return err
		}
		if err := lt.MatmulDescSetAttribute(p.desc, LtDescTransA, int32(g.TransA)); err != nil {
			return err
		}
		if err := lt.MatmulDescSetAttribute(p.desc, LtDescTransB, int32(g.TransB)); err != nil {
			return err
		}
		ar, ac := opShape(g.TransA, g.M, g.K)
		if p.a, err = lt.MatrixLayoutCreate(t.A, ar, ac, int64(g.LDA)); err != nil {
			return err
		}
		br, bc := opShape(g.TransB, g.K, g.N)
		if p.b, err = lt.MatrixLayoutCreate(t.B, br, bc, int64(g.LDB)); err != nil {
			return err
		}
		if p.c, err = lt.MatrixLayoutCreate(t.C, uint64(g.M), uint64(g.N), int64(g.LDC)); err != nil {
			return err
		}
		pref, err := lt.MatmulPreferenceCreate()
		if err != nil {
			return err
		}
		res, err := func() ([]LtHeuristic, error) {
			for _, a := range []struct {
				attr LtPrefAttr
				v    uint64
			}{{LtPrefMaxWorkspaceBytes, uint64(wsBytes)}, {LtPrefMinAlignA, uint64(k.alignA)}, {LtPrefMinAlignB, uint64(k.alignB)},
				{LtPrefMinAlignC, uint64(k.alignC)}, {LtPrefMinAlignD, uint64(k.alignC)}} {
				if err := lt.MatmulPreferenceSetAttribute(pref, a.attr, a.v); err != nil {
					return nil, err
				}
			}
			d.lt.heuristics++
			return lt.MatmulAlgoGetHeuristic(d.lt.handle, p.desc, p.a, p.b, p.c, p.c, pref, tune)
		}()
		err = errors.Join(err, lt.MatmulPreferenceDestroy(pref))
		if err != nil {
			return err
		}
		// The usable candidates, in the heuristic's order: a result
		// whose state is not success, or that wants more workspace than
		// there is, is no candidate.
		var cands []int
		for i, r := range res {
			if r.State == 0 && r.WorkspaceSize <= uint64(wsBytes) {
				cands = append(cands, i)
			}
		}
		switch {
		case len(res) == 0 || res[0].State != 0:
			return fmt.Errorf("cublasLtMatmulAlgoGetHeuristic: no algorithm for op(A)=%v op(B)=%v m=%d n=%d k=%d, types %v/%v→%v, workspace %d bytes", g.TransA, g.TransB, g.M, g.N, g.K, t.A, t.B, t.C, wsBytes)
		case len(cands) == 0:
			return fmt.Errorf("cublasLtMatmulAlgoGetHeuristic: the algorithm wants %d bytes of workspace, %d allowed", res[0].WorkspaceSize, wsBytes)
		}
		// A remembered choice holds while the heuristic still offers its
		// algorithm at its rank (another library or device gives another
		// list: the shape is timed again).
		c, known := d.lt.chosen[k]
		rank := c.rank
		if !known || !slices.Contains(cands, rank) || res[rank].Algo != c.algo {
			rank = cands[0]
			if len(cands) > 1 {
				if rank, err = d.tune(g, t, p, res, cands, ws, wsBytes); err != nil {
					return err
				}
			}
			if len(d.lt.chosen) >= ltMaxChoices {
				clear(d.lt.chosen)
			}
			d.lt.chosen[k] = ltChoice{rank: rank, algo: res[rank].Algo}
		}
		p.algo, p.ws, p.rank = res[rank].Algo, int(res[rank].WorkspaceSize), rank
		return nil
	}()
	if err != nil {
		return nil, errors.Join(err, p.destroy(lt))
	}
	d.lt.plans[k] = p
	return p, nil
}

// tune times the candidates cands (indices into res, in the heuristic's
// order) on g's own operands and returns the fastest one's index; a tie
// goes to the heuristic's earlier candidate. Each candidate runs once to
// warm up (its kernel loaded, its caches filled), then ltTuneReps times
// between two events on the default stream, behind the work queued before
// (the start event is recorded after the warm-up, so that work is not
// counted); the host waits for the end event only. A candidate that
// cublasLtMatmul refuses with CUBLAS_STATUS_NOT_SUPPORTED is skipped; any
// other error ends the plan (it may be the device failing, and hiding it
// would time nothing).
//
// The result stays the chosen algorithm's, whatever ran before: with beta
// 0 the candidates write C in place, which beta 0 does not read (cuBLAS's
// rule), and gemmLt's own run of the chosen algorithm comes after them on
// the stream; with beta ≠ 0, C must keep its contents for that run, so
// the candidates read it and write a temporary D of C's layout
// (cublasLtMatmul's out-of-place form: the same work). If that temporary
// cannot be had (CUDA_ERROR_OUT_OF_MEMORY), the shape keeps the
// heuristic's first candidate untimed. d.mu is held and the context
// current.
func (d *Device) tune(g Gemm, t GemmTypes, p *ltPlan, res []LtHeuristic, cands []int, ws DevPtr, wsBytes int) (best int, err error) {
	lt := d.lt.lib
	out := g.C
	// cleanup frees what tune made, its failures joined to err.
	cleanup := func(f func() error) {
		if e := f(); e != nil {
			err = errors.Join(err, fmt.Errorf("cuBLASLt autotune: %w", e))
		}
	}
	if g.Beta != 0 {
		tmp, err := d.drv.MemAlloc(t.C.Bytes() * max(1, (g.N-1)*g.LDC+g.M))
		var ce *Error
		if errors.As(err, &ce) && ce.Code == CUDAErrorOutOfMemory {
			return cands[0], nil
		}
		if err != nil {
			return 0, fmt.Errorf("cuBLASLt autotune: output scratch: %w", err)
		}
		defer cleanup(func() error { return d.drv.MemFree(tmp) })
		out = tmp
	}
	start, err := d.drv.EventCreate()
	if err != nil {
		return 0, fmt.Errorf("cuBLASLt autotune: %w", err)
	}
	defer cleanup(func() error { return d.drv.EventDestroy(start) })
	end, err := d.drv.EventCreate()
	if err != nil {
		return 0, fmt.Errorf("cuBLASLt autotune: %w", err)
	}
	defer cleanup(func() error { return d.drv.EventDestroy(end) })
	best, bestMs := -1, float32(0)
	for _, i := range cands {
		m := LtMatmul{Desc: p.desc, Alpha: g.Alpha, Beta: g.Beta, A: g.A, ALayout: p.a, B: g.B, BLayout: p.b,
			C: g.C, CLayout: p.c, D: out, DLayout: p.c, Algo: res[i].Algo, Workspace: ws, WorkspaceBytes: wsBytes}
		if err := lt.Matmul(d.lt.handle, m); err != nil {
			var ce *Error
			if errors.As(err, &ce) && ce.Code == BLASStatusNotSupported {
				continue
			}
			return 0, fmt.Errorf("cuBLASLt autotune, candidate %d: %w", i, err)
		}
		if err := d.drv.EventRecord(start); err != nil {
			return 0, fmt.Errorf("cuBLASLt autotune: %w", err)
		}
		for range ltTuneReps {
			if err := lt.Matmul(d.lt.handle, m); err != nil {
				return 0, fmt.Errorf("cuBLASLt autotune, candidate %d: %w", i, err)
			}
		}
		if err := d.drv.EventRecord(end); err != nil {
			return 0, fmt.Errorf("cuBLASLt autotune: %w", err)
		}
		if err := d.drv.EventSynchronize(end); err != nil {
			return 0, fmt.Errorf("cuBLASLt autotune, candidate %d: %w", i, err)
		}
		ms, err := d.drv.EventElapsedTime(start, end)
		if err != nil {
			return 0, fmt.Errorf("cuBLASLt autotune: %w", err)
		}
		if best < 0 || ms < bestMs {
			best, bestMs = i, ms
		}
	}
	if best < 0 {
		return 0, fmt.Errorf("cuBLASLt autotune: none of the heuristic's %d algorithms ran op(A)=%v op(B)=%v m=%d n=%d k=%d (CUBLAS_STATUS_NOT_SUPPORTED)", len(cands), g.TransA, g.TransB, g.M, g.N, g.K)
	}
	d.lt.tuned++
	return best, nil
}

// gemmLt runs the column-major g (Batch 1) through cublasLtMatmul, D = C
// in place, with workspace ws (nil: none). d.mu is held and the context
// current.
func (d *Device) gemmLt(g Gemm, t GemmTypes, ws *Buffer) error {
	if d.lt.lib == nil {
		if d.lt.missing != nil {
			return d.lt.missing
		}
		return errors.New("cuBLASLt was not loaded (cuda.Options.BLASLt)")
	}
	if g.Batch > 1 {
		return fmt.Errorf("cublasLtMatmul: batch %d (only single products go through cuBLASLt)", g.Batch)
	}
	var wsPtr DevPtr
	wsBytes := 0
	if ws != nil {
		if err := ws.checkLive(); err != nil {
			return err
		}
		wsPtr, wsBytes = ws.ptr, 4*ws.n
	}
	p, err := d.plan(g, t, wsPtr, wsBytes)
	if err != nil {
		return err
	}
	return d.lt.lib.Matmul(d.lt.handle, LtMatmul{Desc: p.desc, Alpha: g.Alpha, Beta: g.Beta,
		A: g.A, ALayout: p.a, B: g.B, BLayout: p.b, C: g.C, CLayout: p.c, D: g.C, DLayout: p.c,
		Algo: p.algo, Workspace: wsPtr, WorkspaceBytes: wsBytes})
}

// MatmulBF16 computes the row-major c [M,N] = op(a)·op(b) + beta·c with
// a and b holding bfloat16 values (UploadBF16: a [M,K], or [K,M] when
// transA; b [K,N], or [N,K] when transB) and c float32: one cublasGemmEx
// (CUBLAS_COMPUTE_32F), the bf16 linear ops' GEMM.
func (d *Device) MatmulBF16(c, a, b *Buffer, M, N, K int, transA, transB bool, beta float32) error {
	return d.matmulBF16(c, a, b, nil, M, N, K, transA, transB, beta, false)
}

// MatmulBF16Lt is MatmulBF16 through cublasLtMatmul, the same column-major
// arguments, with workspace ws (nil: none) and the algorithm planned for
// the shape (cached until Close): the autotune's fastest candidate, timed
// at the shape's first call, or the heuristic's first (SetLtAutotune).
func (d *Device) MatmulBF16Lt(c, a, b, ws *Buffer, M, N, K int, transA, transB bool, beta float32) error {
	return d.matmulBF16(c, a, b, ws, M, N, K, transA, transB, beta, true)
}

func (d *Device) matmulBF16(c, a, b, ws *Buffer, M, N, K int, transA, transB bool, beta float32, lt bool) error {
	const op = "MatmulBF16"
	if M < 0 || N < 0 || K < 0 {
		return fmt.Errorf("CUDA %s: M=%d N=%d K=%d", op, M, N, K)
	}
	for _, x := range []struct {
		name string
		b    *Buffer
		n    int
	}{{"c", c, M * N}, {"a", a, bf16Len(M * K)}, {"b", b, bf16Len(K * N)}} {
		if x.b == nil || x.b.Len() < x.n {
			return fmt.Errorf("CUDA %s: %s holds fewer than %d elements", op, x.name, x.n)
		}
	}
	return d.gemmRows(mm{C: c, A: a, B: b, M: M, N: N, K: K, TransA: transA, TransB: transB, Beta: beta, BF16: true, Lt: lt, LtWS: ws})
}

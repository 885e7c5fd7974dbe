package cuda

import (
	"cmp"
	"errors"
	"fmt"
)

// GEMMs through cuBLASLt (issue #28 asks for bindings to it beside
// cuBLAS): cublasLtMatmul with an algorithm from
// cublasLtMatmulAlgoGetHeuristic and a workspace, on the same column-major
// arguments as the cublasGemmEx path (gemmRows maps the row-major product
// the same way for both). cuBLASLt lets the caller hand it a workspace
// and pick among the heuristic's algorithms; cublasGemmEx picks with no
// workspace of the caller's. Whether that is faster on the 7B step's base
// GEMMs is for TestGemmLtOnHardware to say; until it has run on a GPU
// cublasGemmEx stays the default (Ops.SetGEMMLibrary).

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
}

// ltKey is what the heuristic's choice depends on: the operations, sizes,
// leading dimensions, types, the operands' alignment and the workspace.
type ltKey struct {
	ta, tb                 Op
	m, n, k, lda, ldb, ldc int
	t                      GemmTypes
	alignA, alignB, alignC uint32
	ws                     int
}

// ltPlan is one shape's descriptors and algorithm, kept until Close.
type ltPlan struct {
	desc    LtMatmulDesc
	a, b, c LtLayout
	algo    LtAlgo
	ws      int // the workspace the algorithm needs
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
		d.lt = ltState{lib: lt, handle: h, plans: map[ltKey]*ltPlan{}}
		return nil
	})
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
	d.lt = ltState{heuristics: d.lt.heuristics} // the count stays readable
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

// plan returns the cached plan of g's shape, making it (descriptors, then
// the heuristic's best algorithm within the workspace) the first time.
// d.mu is held and the context current.
func (d *Device) plan(g Gemm, t GemmTypes, wsBytes int) (*ltPlan, error) {
	k := ltKey{ta: g.TransA, tb: g.TransB, m: g.M, n: g.N, k: g.K, lda: g.LDA, ldb: g.LDB, ldc: g.LDC, t: t,
		alignA: align(g.A), alignB: align(g.B), alignC: align(g.C), ws: wsBytes}
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
			return lt.MatmulAlgoGetHeuristic(d.lt.handle, p.desc, p.a, p.b, p.c, p.c, pref, 1)
		}()
		err = errors.Join(err, lt.MatmulPreferenceDestroy(pref))
		if err != nil {
			return err
		}
		if len(res) == 0 || res[0].State != 0 {
			return fmt.Errorf("cublasLtMatmulAlgoGetHeuristic: no algorithm for op(A)=%v op(B)=%v m=%d n=%d k=%d, types %v/%v→%v, workspace %d bytes", g.TransA, g.TransB, g.M, g.N, g.K, t.A, t.B, t.C, wsBytes)
		}
		if res[0].WorkspaceSize > uint64(wsBytes) {
			return fmt.Errorf("cublasLtMatmulAlgoGetHeuristic: the algorithm wants %d bytes of workspace, %d allowed", res[0].WorkspaceSize, wsBytes)
		}
		p.algo, p.ws = res[0].Algo, int(res[0].WorkspaceSize)
		return nil
	}()
	if err != nil {
		return nil, errors.Join(err, p.destroy(lt))
	}
	d.lt.plans[k] = p
	return p, nil
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
	p, err := d.plan(g, t, wsBytes)
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
// arguments, with workspace ws (nil: none) and the heuristic's algorithm
// for the shape (cached until Close).
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

package cudafake

import (
	"fmt"
	"sync"

	"github.com/hone-rl/hone/kernels/cuda"
)

// BLASLt is an in-memory cuda.BLASLt over a fake Driver's memory, for the
// GEMMs the backend runs through cublasLtMatmul. It keeps every descriptor
// it hands out and checks what cuBLASLt checks or what would go wrong on a
// GPU: a layout whose shape does not fit the descriptor's operation and
// the output's, a leading dimension below the rows, types other than the
// backend's, an algorithm the heuristic did not give for these descriptors
// (its Data holds a fingerprint of them), a workspace smaller than the
// algorithm needs or than the preference allowed it, operands outside one
// allocation. The product is the fake BLAS's (product, from the definition,
// in float64), so a GEMM gives the same bits through either library.
//
// For the autotune (gemmlt.go) the heuristic can offer several algorithms
// (SetAlgos): algorithm i ≥ 1 cuts its K sums in i+1 parts (productSplit),
// so its bits differ from algorithm 0's and from each other's, each run
// of algorithm i moves the driver's stream clock on by the cost the test
// set (events.go), and algorithms marked so fail with
// CUBLAS_STATUS_NOT_SUPPORTED. D may differ from C (out of place: C read,
// D of C's layout written).
type BLASLt struct {
	drv     *Driver
	mu      sync.Mutex
	next    uintptr
	handles map[cuda.LtHandle]bool
	descs   map[cuda.LtMatmulDesc]*ltDesc
	layouts map[cuda.LtLayout]ltLayout
	prefs   map[cuda.LtPreference]map[cuda.LtPrefAttr]uint64
	// AlgoWorkspace is the workspace the heuristic's algorithm asks for,
	// capped at the preference's maximum (default 1 MiB).
	AlgoWorkspace uint64
	matmuls       int
	algos         int          // algorithms the heuristic offers (SetAlgos; 1 by default)
	cost          []float64    // milliseconds per run of algorithm i (SetAlgos)
	unsupported   map[int]bool // algorithms failing with NOT_SUPPORTED (SetAlgos)
	ran           []LtRun      // every Matmul that ran (Runs)
}

// LtRun is one cublasLtMatmul the fake ran: its algorithm (the index in the
// heuristic's list) and whether it wrote C in place.
type LtRun struct {
	Algo    int
	InPlace bool
}

// SetAlgos makes the heuristic offer up to n algorithms (best first, as
// many as it is asked for); a run of algorithm i costs costMs[i]
// milliseconds on the stream's clock (1 past the table's end), and the
// algorithms in notSupported fail in cublasLtMatmul with
// CUBLAS_STATUS_NOT_SUPPORTED. n 0 makes the heuristic find none.
func (b *BLASLt) SetAlgos(n int, costMs []float64, notSupported ...int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.algos, b.cost = n, append([]float64(nil), costMs...)
	b.unsupported = map[int]bool{}
	for _, i := range notSupported {
		b.unsupported[i] = true
	}
}

// Runs returns the cublasLtMatmul calls that ran (failed ones left out), in
// order.
func (b *BLASLt) Runs() []LtRun {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]LtRun(nil), b.ran...)
}

type ltDesc struct {
	compute cuda.ComputeType
	scale   cuda.DataType
	ta, tb  int32
}

type ltLayout struct {
	t          cuda.DataType
	rows, cols uint64
	ld         int64
}

// NewBLASLt returns a fake cuBLASLt working on drv's memory.
func NewBLASLt(drv *Driver) *BLASLt {
	return &BLASLt{drv: drv, next: 0x8000, handles: map[cuda.LtHandle]bool{}, descs: map[cuda.LtMatmulDesc]*ltDesc{},
		layouts: map[cuda.LtLayout]ltLayout{}, prefs: map[cuda.LtPreference]map[cuda.LtPrefAttr]uint64{}, AlgoWorkspace: 1 << 20,
		algos: 1}
}

// Live returns the handles and descriptors created and not destroyed.
func (b *BLASLt) Live() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.handles) + len(b.descs) + len(b.layouts) + len(b.prefs)
}

// Matmuls returns the number of cublasLtMatmul calls that ran.
func (b *BLASLt) Matmuls() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.matmuls
}

func (b *BLASLt) Path() string { return "fake" }

func (b *BLASLt) id() uintptr { b.next += 16; return b.next }

func (b *BLASLt) Create() (cuda.LtHandle, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := cuda.LtHandle(b.id())
	b.handles[h] = true
	return h, nil
}

func (b *BLASLt) Destroy(h cuda.LtHandle) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.handles[h] {
		return blasFail("cublasLtDestroy", blasNotInitialized, "unknown handle")
	}
	delete(b.handles, h)
	return nil
}

func (b *BLASLt) MatmulDescCreate(compute cuda.ComputeType, scale cuda.DataType) (cuda.LtMatmulDesc, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	d := cuda.LtMatmulDesc(b.id())
	b.descs[d] = &ltDesc{compute: compute, scale: scale}
	return d, nil
}

func (b *BLASLt) MatmulDescDestroy(d cuda.LtMatmulDesc) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.descs[d] == nil {
		return blasFail("cublasLtMatmulDescDestroy", blasInvalidValue, "unknown descriptor")
	}
	delete(b.descs, d)
	return nil
}

func (b *BLASLt) MatmulDescSetAttribute(d cuda.LtMatmulDesc, a cuda.LtDescAttr, v int32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	desc := b.descs[d]
	switch {
	case desc == nil:
		return blasFail("cublasLtMatmulDescSetAttribute", blasInvalidValue, "unknown descriptor")
	case v != int32(cuda.OpN) && v != int32(cuda.OpT):
		return blasFail("cublasLtMatmulDescSetAttribute", blasInvalidValue, fmt.Sprintf("operation %d", v))
	case a == cuda.LtDescTransA:
		desc.ta = v
	case a == cuda.LtDescTransB:
		desc.tb = v
	default:
		return blasFail("cublasLtMatmulDescSetAttribute", blasInvalidValue, fmt.Sprintf("attribute %d", a))
	}
	return nil
}

func (b *BLASLt) MatrixLayoutCreate(t cuda.DataType, rows, cols uint64, ld int64) (cuda.LtLayout, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ld < int64(max(1, rows)) {
		return 0, blasFail("cublasLtMatrixLayoutCreate", blasInvalidValue, fmt.Sprintf("ld %d < rows %d", ld, rows))
	}
	l := cuda.LtLayout(b.id())
	b.layouts[l] = ltLayout{t: t, rows: rows, cols: cols, ld: ld}
	return l, nil
}

func (b *BLASLt) MatrixLayoutDestroy(l cuda.LtLayout) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.layouts[l]; !ok {
		return blasFail("cublasLtMatrixLayoutDestroy", blasInvalidValue, "unknown layout")
	}
	delete(b.layouts, l)
	return nil
}

func (b *BLASLt) MatmulPreferenceCreate() (cuda.LtPreference, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := cuda.LtPreference(b.id())
	b.prefs[p] = map[cuda.LtPrefAttr]uint64{}
	return p, nil
}

func (b *BLASLt) MatmulPreferenceDestroy(p cuda.LtPreference) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.prefs[p] == nil {
		return blasFail("cublasLtMatmulPreferenceDestroy", blasInvalidValue, "unknown preference")
	}
	delete(b.prefs, p)
	return nil
}

func (b *BLASLt) MatmulPreferenceSetAttribute(p cuda.LtPreference, a cuda.LtPrefAttr, v uint64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	pref := b.prefs[p]
	switch {
	case pref == nil:
		return blasFail("cublasLtMatmulPreferenceSetAttribute", blasInvalidValue, "unknown preference")
	case a == cuda.LtPrefMaxWorkspaceBytes:
	case a >= cuda.LtPrefMinAlignA && a <= cuda.LtPrefMinAlignD:
		if v == 0 || v&(v-1) != 0 {
			return blasFail("cublasLtMatmulPreferenceSetAttribute", blasInvalidValue, fmt.Sprintf("alignment %d", v))
		}
	default:
		return blasFail("cublasLtMatmulPreferenceSetAttribute", blasInvalidValue, fmt.Sprintf("attribute %d", a))
	}
	pref[a] = v
	return nil
}

// shapes checks the descriptors of one matmul and returns its column-major
// arguments (pointers unset) and types.
func (b *BLASLt) shapes(call string, d cuda.LtMatmulDesc, a, bl, c, dl cuda.LtLayout) (cuda.Gemm, cuda.GemmTypes, error) {
	desc := b.descs[d]
	la, okA := b.layouts[a]
	lb, okB := b.layouts[bl]
	lc, okC := b.layouts[c]
	ld, okD := b.layouts[dl]
	if desc == nil || !okA || !okB || !okC || !okD {
		return cuda.Gemm{}, cuda.GemmTypes{}, blasFail(call, blasInvalidValue, "unknown descriptor or layout")
	}
	if lc != ld {
		return cuda.Gemm{}, cuda.GemmTypes{}, blasFail(call, blasNotSupported, "C and D layouts differ")
	}
	g := cuda.Gemm{TransA: cuda.Op(desc.ta), TransB: cuda.Op(desc.tb), M: int(ld.rows), N: int(ld.cols), LDA: int(la.ld), LDB: int(lb.ld), LDC: int(ld.ld), Batch: 1}
	ar, ac := la.rows, la.cols // op(A) is m×k
	if g.TransA == cuda.OpT {
		ar, ac = ac, ar
	}
	br, bc := lb.rows, lb.cols // op(B) is k×n
	if g.TransB == cuda.OpT {
		br, bc = bc, br
	}
	if ar != ld.rows || bc != ld.cols || ac != br {
		return cuda.Gemm{}, cuda.GemmTypes{}, blasFail(call, blasInvalidValue, fmt.Sprintf("op(A) %d×%d, op(B) %d×%d and D %d×%d do not make a product (op(A)=%v op(B)=%v)", ar, ac, br, bc, ld.rows, ld.cols, g.TransA, g.TransB))
	}
	g.K = int(ac)
	t := cuda.GemmTypes{A: la.t, B: lb.t, C: lc.t, Compute: desc.compute}
	if t.A != t.B || t.A != cuda.R16BF || t.C != cuda.R32F && t.C != cuda.R16BF || t.Compute != cuda.Compute32F || desc.scale != cuda.R32F {
		return cuda.Gemm{}, cuda.GemmTypes{}, blasFail(call, blasNotSupported, fmt.Sprintf("types A %v, B %v, C %v, compute %v, scale %v", t.A, t.B, t.C, t.Compute, desc.scale))
	}
	return g, t, nil
}

// fingerprint ties algorithm algo (its index in the heuristic's list, in
// the second word above the operations) to the shapes it was chosen for;
// its last word is the workspace the algorithm needs.
func fingerprint(g cuda.Gemm, ws uint64, algo int) [8]uint64 {
	return [8]uint64{0x4c74616c676f, uint64(algo)<<8 | uint64(g.TransA)<<1 | uint64(g.TransB), uint64(g.M), uint64(g.N), uint64(g.K),
		uint64(g.LDA), uint64(g.LDB)<<32 | uint64(g.LDC), ws}
}

func (b *BLASLt) MatmulAlgoGetHeuristic(h cuda.LtHandle, d cuda.LtMatmulDesc, a, bl, c, dl cuda.LtLayout, p cuda.LtPreference, n int) ([]cuda.LtHeuristic, error) {
	const call = "cublasLtMatmulAlgoGetHeuristic"
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.handles[h] {
		return nil, blasFail(call, blasNotInitialized, "unknown handle")
	}
	pref := b.prefs[p]
	if pref == nil || n < 1 {
		return nil, blasFail(call, blasInvalidValue, fmt.Sprintf("preference %#x, %d results asked for", p, n))
	}
	g, _, err := b.shapes(call, d, a, bl, c, dl)
	if err != nil {
		return nil, err
	}
	ws := min(b.AlgoWorkspace, pref[cuda.LtPrefMaxWorkspaceBytes])
	res := make([]cuda.LtHeuristic, min(n, b.algos))
	for i := range res {
		res[i] = cuda.LtHeuristic{Algo: cuda.LtAlgo{Data: fingerprint(g, ws, i)}, WorkspaceSize: ws, WavesCount: 1}
	}
	return res, nil
}

func (b *BLASLt) Matmul(h cuda.LtHandle, m cuda.LtMatmul) error {
	const call = "cublasLtMatmul"
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.handles[h] {
		return blasFail(call, blasNotInitialized, "unknown handle")
	}
	g, t, err := b.shapes(call, m.Desc, m.ALayout, m.BLayout, m.CLayout, m.DLayout)
	if err != nil {
		return err
	}
	need, algo := m.Algo.Data[7], int(m.Algo.Data[1]>>8)
	if m.Algo.Data != fingerprint(g, need, algo) || algo >= b.algos {
		return blasFail(call, blasInvalidValue, "the algorithm was not chosen for these descriptors")
	}
	if b.unsupported[algo] {
		return blasFail(call, blasNotSupported, fmt.Sprintf("algorithm %d refuses these operands (the test said so)", algo))
	}
	if uint64(m.WorkspaceBytes) < need || (m.WorkspaceBytes > 0 && m.Workspace == 0) {
		return blasFail(call, blasInvalidValue, fmt.Sprintf("workspace %d bytes at %#x, the algorithm needs %d", m.WorkspaceBytes, uint64(m.Workspace), need))
	}
	if m.WorkspaceBytes > 0 {
		b.drv.mu.Lock()
		_, ok := b.drv.span(m.Workspace, m.WorkspaceBytes)
		b.drv.mu.Unlock()
		if !ok {
			return blasFail(call, blasExecutionFailed, fmt.Sprintf("workspace of %d bytes at %#x is not inside one allocation", m.WorkspaceBytes, uint64(m.Workspace)))
		}
	}
	g.Alpha, g.Beta, g.A, g.B, g.C = m.Alpha, m.Beta, m.A, m.B, m.C
	cost := 1.0
	if algo < len(b.cost) {
		cost = b.cost[algo]
	}
	if err := b.drv.queueProduct(call, g, t, m.D, algo+1, cost); err != nil {
		return err
	}
	b.matmuls++
	b.ran = append(b.ran, LtRun{Algo: algo, InPlace: m.C == m.D})
	return nil
}

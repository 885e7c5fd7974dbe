package cudafake

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
)

// The cublasStatus_t codes the fake returns.
const (
	blasNotInitialized  = 1
	blasInvalidValue    = cuda.BLASStatusInvalidValue
	blasExecutionFailed = 13
	blasNotSupported    = 15
)

func blasFail(call string, code int, text string) error {
	name := map[int]string{blasNotInitialized: "CUBLAS_STATUS_NOT_INITIALIZED",
		blasInvalidValue: "CUBLAS_STATUS_INVALID_VALUE", blasExecutionFailed: "CUBLAS_STATUS_EXECUTION_FAILED",
		blasNotSupported: "CUBLAS_STATUS_NOT_SUPPORTED"}[code]
	return &cuda.Error{Call: call, Code: code, Name: name, Text: text}
}

// BLAS is an in-memory cuda.BLAS over a fake Driver's memory: its GEMMs
// compute the column-major product from the BLAS definition, after the
// argument checks cuBLAS makes (leading dimensions) and a check that every
// operand lies inside one allocation (on a GPU, a read outside one is an
// illegal address). It records every GEMM's arguments.
type BLAS struct {
	drv     *Driver
	mu      sync.Mutex
	handles map[cuda.BLASHandle]bool
	next    cuda.BLASHandle
	gemms   []cuda.Gemm
	types   []cuda.GemmTypes
	fail    map[string]int // FailNext
}

// NewBLAS returns a fake cuBLAS working on drv's memory.
func NewBLAS(drv *Driver) *BLAS {
	return &BLAS{drv: drv, handles: map[cuda.BLASHandle]bool{}, next: 0x4000, fail: map[string]int{}}
}

// Handles returns the number of handles created and not destroyed.
func (b *BLAS) Handles() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.handles)
}

// GemmTypes returns the operand and compute types of every GEMM call so
// far, in the order of Gemms (float32 throughout for Sgemm and
// SgemmStridedBatched).
func (b *BLAS) GemmTypes() []cuda.GemmTypes {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]cuda.GemmTypes(nil), b.types...)
}

// Gemms returns the arguments of every GEMM call so far.
func (b *BLAS) Gemms() []cuda.Gemm {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]cuda.Gemm(nil), b.gemms...)
}

// FailNext makes the next call of the entry point call
// ("cublasSgemm_v2") fail with the cublasStatus_t code.
func (b *BLAS) FailNext(call string, code int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fail[call] = code
}

func (b *BLAS) Path() string { return "fake" }

func (b *BLAS) Create() (cuda.BLASHandle, error) {
	b.drv.mu.Lock()
	current := b.drv.current
	b.drv.mu.Unlock()
	if current == 0 {
		return 0, blasFail("cublasCreate_v2", blasNotInitialized, "no current context")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.next++
	b.handles[b.next] = true
	return b.next, nil
}

func (b *BLAS) Destroy(h cuda.BLASHandle) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.handles[h] {
		return blasFail("cublasDestroy_v2", blasNotInitialized, "unknown handle")
	}
	delete(b.handles, h)
	return nil
}

func (b *BLAS) Sgemm(h cuda.BLASHandle, g cuda.Gemm) error {
	g.Batch, g.StrideA, g.StrideB, g.StrideC = 1, 0, 0, 0
	return b.gemm("cublasSgemm_v2", h, g, f32Types)
}

func (b *BLAS) SgemmStridedBatched(h cuda.BLASHandle, g cuda.Gemm) error {
	return b.gemm("cublasSgemmStridedBatched", h, g, f32Types)
}

// f32Types are Sgemm's types.
var f32Types = cuda.GemmTypes{A: cuda.R32F, B: cuda.R32F, C: cuda.R32F, Compute: cuda.Compute32F}

// GemmEx computes the product on the combinations of types the backend
// uses, from the definition: A and B both CUDA_R_32F or both CUDA_R_16BF,
// C CUDA_R_32F, CUBLAS_COMPUTE_32F (bfloat16 values widened exactly, the
// products and sums in float64: the exact result, rounded once); A, B and
// C all CUDA_R_16BF, CUBLAS_COMPUTE_32F, where the float32 result (Beta·C
// on C's old values widened) is rounded to bfloat16 on store, nearest
// even, as cuBLAS's epilogue converts its float32 accumulator (and
// kernels.ToBF16 rounds); or A, B
// and C CUDA_R_32F with CUBLAS_COMPUTE_32F_FAST_TF32, every A and B element
// rounded to TF32 first (RoundTF32), so that a test sees TF32's error. Other
// combinations, which cuBLAS may well support, fail with
// CUBLAS_STATUS_NOT_SUPPORTED: the backend has no use for them.
func (b *BLAS) GemmEx(h cuda.BLASHandle, g cuda.Gemm, t cuda.GemmTypes) error {
	g.Batch, g.StrideA, g.StrideB, g.StrideC = 1, 0, 0, 0
	return b.gemm("cublasGemmEx", h, g, t)
}

// GemmStridedBatchedEx is GemmEx on g.Batch products at g's strides (in
// elements of each operand's type), every one checked to lie inside one
// allocation.
func (b *BLAS) GemmStridedBatchedEx(h cuda.BLASHandle, g cuda.Gemm, t cuda.GemmTypes) error {
	return b.gemm("cublasGemmStridedBatchedEx", h, g, t)
}

// matrix is a column-major operand in the fake's memory: float32
// elements, or bfloat16 ones when bf16; read rounded to TF32 when tf32.
type matrix struct {
	mem  []byte
	ld   int
	bf16 bool
	tf32 bool
}

func (m matrix) at(i, j int) float32 {
	if m.bf16 {
		return math.Float32frombits(uint32(binary.LittleEndian.Uint16(m.mem[2*(i+j*m.ld):])) << 16)
	}
	v := math.Float32frombits(binary.LittleEndian.Uint32(m.mem[4*(i+j*m.ld):]))
	if m.tf32 {
		return RoundTF32(v)
	}
	return v
}

// set stores v, rounded to bfloat16 (kernels.BF16) in a bfloat16 matrix.
func (m matrix) set(i, j int, v float32) {
	if m.bf16 {
		binary.LittleEndian.PutUint16(m.mem[2*(i+j*m.ld):], kernels.BF16(v))
		return
	}
	binary.LittleEndian.PutUint32(m.mem[4*(i+j*m.ld):], math.Float32bits(v))
}

// extent is the number of elements a column-major rows×cols matrix with
// leading dimension ld spans.
func extent(rows, cols, ld int) int {
	if rows == 0 || cols == 0 {
		return 0
	}
	return (cols-1)*ld + rows
}

func (b *BLAS) gemm(call string, h cuda.BLASHandle, g cuda.Gemm, t cuda.GemmTypes) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if code, ok := b.fail[call]; ok {
		delete(b.fail, call)
		return blasFail(call, code, "injected by the test")
	}
	if !b.handles[h] {
		return blasFail(call, blasNotInitialized, "unknown handle")
	}
	if err := checkGemm(call, g); err != nil {
		return err
	}
	tf32 := t.Compute == cuda.Compute32FFastTF32 && t.A == cuda.R32F
	bf16C := t.C == cuda.R16BF && t.A == cuda.R16BF && t.Compute == cuda.Compute32F
	if t.A != t.B || (t.A != cuda.R32F && t.A != cuda.R16BF) || (t.C != cuda.R32F && !bf16C) || (t.Compute != cuda.Compute32F && !tf32) {
		return blasFail(call, blasNotSupported, fmt.Sprintf("types A %v, B %v, C %v, compute %v", t.A, t.B, t.C, t.Compute))
	}
	b.gemms = append(b.gemms, g)
	b.types = append(b.types, t)
	return b.drv.blasProduct(call, g, t)
}

// checkGemm makes cuBLAS's argument checks.
func checkGemm(call string, g cuda.Gemm) error {
	rowsA, rowsB := g.M, g.K
	if g.TransA == cuda.OpT {
		rowsA = g.K
	}
	if g.TransB == cuda.OpT {
		rowsB = g.N
	}
	switch {
	case g.TransA != cuda.OpN && g.TransA != cuda.OpT, g.TransB != cuda.OpN && g.TransB != cuda.OpT:
		return blasFail(call, blasInvalidValue, "unknown operation")
	case g.M < 0 || g.N < 0 || g.K < 0 || g.Batch < 0:
		return blasFail(call, blasInvalidValue, fmt.Sprintf("m=%d n=%d k=%d batch=%d", g.M, g.N, g.K, g.Batch))
	case g.LDA < max(1, rowsA) || g.LDB < max(1, rowsB) || g.LDC < max(1, g.M):
		return blasFail(call, blasInvalidValue, fmt.Sprintf("lda=%d ldb=%d ldc=%d for op(A)=%v op(B)=%v m=%d n=%d k=%d", g.LDA, g.LDB, g.LDC, g.TransA, g.TransB, g.M, g.N, g.K))
	}
	return nil
}

// product is C = Alpha·op(A)·op(B) + Beta·C from the definition, in
// float64; Beta 0 ignores C's contents (cuBLAS's rule).
func product(g cuda.Gemm, a, b, c matrix) {
	for j := range g.N {
		for i := range g.M {
			var s float64
			for l := range g.K {
				var av, bv float32
				if g.TransA == cuda.OpT {
					av = a.at(l, i)
				} else {
					av = a.at(i, l)
				}
				if g.TransB == cuda.OpT {
					bv = b.at(j, l)
				} else {
					bv = b.at(l, j)
				}
				s += float64(av) * float64(bv)
			}
			v := float64(g.Alpha) * s
			if g.Beta != 0 {
				v += float64(g.Beta) * float64(c.at(i, j))
			}
			c.set(i, j, float32(v))
		}
	}
}

// productSplit is product with the K sum cut into split parts (split ≤ 1:
// product itself): each part summed in float64 and rounded to float32,
// the parts added in float32, as a split-K algorithm reduces its partial
// products. Its bits differ from product's (and between splits), as those
// of two cuBLASLt algorithms may.
func productSplit(g cuda.Gemm, a, b, c matrix, split int) {
	if split <= 1 || g.K < 2 {
		product(g, a, b, c)
		return
	}
	chunk := (g.K + split - 1) / split
	for j := range g.N {
		for i := range g.M {
			var acc float32
			for l0 := 0; l0 < g.K; l0 += chunk {
				var s float64
				for l := l0; l < min(l0+chunk, g.K); l++ {
					var av, bv float32
					if g.TransA == cuda.OpT {
						av = a.at(l, i)
					} else {
						av = a.at(i, l)
					}
					if g.TransB == cuda.OpT {
						bv = b.at(j, l)
					} else {
						bv = b.at(l, j)
					}
					s += float64(av) * float64(bv)
				}
				acc += float32(s)
			}
			v := float64(g.Alpha) * float64(acc)
			if g.Beta != 0 {
				v += float64(g.Beta) * float64(c.at(i, j))
			}
			c.set(i, j, float32(v))
		}
	}
}

// blasProduct queues the column-major product g (g.Batch of them at g's
// strides) on the fake's memory, after checking that every operand lies
// inside one allocation: BLAS's GEMMs and BLASLt's Matmul.
func (d *Driver) blasProduct(call string, g cuda.Gemm, t cuda.GemmTypes) error {
	return d.queueProduct(call, g, t, g.C, 1, 0)
}

// queueProduct is blasProduct writing D = Alpha·op(A)·op(B) + Beta·C at
// out (g.C: in place; else a matrix of C's shape, ld and type, Batch 1), its K
// sums cut in split parts (productSplit), and the stream's clock moved on
// by cost milliseconds after it (events.go).
func (d *Driver) queueProduct(call string, g cuda.Gemm, t cuda.GemmTypes, out cuda.DevPtr, split int, cost float64) error {
	tf32 := t.Compute == cuda.Compute32FFastTF32 && t.A == cuda.R32F
	ar, ac := g.M, g.K // op(A) is m×k: A is stored m×k, or k×m when transposed
	if g.TransA == cuda.OpT {
		ar, ac = g.K, g.M
	}
	br, bc := g.K, g.N
	if g.TransB == cuda.OpT {
		br, bc = g.N, g.K
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	mats := make([][3]matrix, g.Batch)
	for i := range g.Batch {
		ops := [3]struct {
			name      string
			p         cuda.DevPtr
			stride    int64
			rows, col int
			ld        int
			typ       cuda.DataType
		}{{"A", g.A, g.StrideA, ar, ac, g.LDA, t.A}, {"B", g.B, g.StrideB, br, bc, g.LDB, t.B}, {"C", g.C, g.StrideC, g.M, g.N, g.LDC, t.C}}
		for j, o := range ops {
			size := o.typ.Bytes()
			p := o.p + cuda.DevPtr(int64(size)*int64(i)*o.stride)
			mem, ok := d.span(p, size*extent(o.rows, o.col, o.ld))
			if !ok {
				return blasFail(call, blasExecutionFailed, fmt.Sprintf("batch %d: %s (%d×%d, ld %d) at %#x is not inside one allocation", i, o.name, o.rows, o.col, o.ld, uint64(p)))
			}
			mats[i][j] = matrix{mem: mem, ld: o.ld, bf16: o.typ == cuda.R16BF, tf32: tf32 && j < 2}
		}
	}
	var dst matrix
	if out != g.C {
		mem, ok := d.span(out, t.C.Bytes()*extent(g.M, g.N, g.LDC))
		if !ok || g.Batch != 1 {
			return blasFail(call, blasExecutionFailed, fmt.Sprintf("D (%d×%d, ld %d) at %#x is not inside one allocation", g.M, g.N, g.LDC, uint64(out)))
		}
		dst = matrix{mem: mem, ld: g.LDC, bf16: t.C == cuda.R16BF}
	}
	// On the stream: now, or at the next synchronization point in the
	// driver's deferred mode (deferred.go).
	err := d.submit(call, func() error {
		for _, m := range mats {
			c := m[2]
			if dst.mem != nil { // out of place: C read (Beta ≠ 0 only), D written
				if g.Beta != 0 {
					for j := range g.N {
						for i := range g.M {
							dst.set(i, j, c.at(i, j))
						}
					}
				}
				c = dst
			}
			productSplit(g, m[0], m[1], c, split)
		}
		return nil
	})
	if err != nil || cost == 0 {
		return err
	}
	return d.advance(call, cost)
}

package cuda

import (
	"fmt"

	"github.com/hone-rl/hone/kernels"
)

// mm is one GEMM of an op, on row-major operands with row strides and
// offsets (the Linear and Logprob plans of ops_linear.go and
// ops_logprob.go):
//
//	C [M,N] = op(A)·op(B) + Beta·C    (Beta 0: C's old contents ignored)
//
// A is stored [M,K], or [K,M] when TransA; B [K,N], or [N,K] when TransB.
// LDA, LDB and LDC are the row strides as stored (0: the dense row
// length); OffA, OffB and OffC the first element, in elements of the
// operand's type. With BF16, A and B hold bfloat16 values and the product
// is cublasGemmEx with float32 accumulation (kernels.PrecisionBF16);
// otherwise all three are float32 and it is cublasSgemm (exact f32). C is
// float32 either way. With TF32 (one product of float32 operands), A and
// B are multiplied as Device.MatmulTF32 does (cublasGemmEx with
// CUBLAS_COMPUTE_32F_FAST_TF32; ops_lora.go's plan). With Batch > 1 it is
// Batch such products, operand
// b's first element StrideA·b (StrideB·b, StrideC·b) past OffA (OffB,
// OffC): one cublasGemmStridedBatchedEx (BF16) or
// cublasSgemmStridedBatched call. With CBF16 (one BF16 product) C holds
// bfloat16 values too: cublasGemmEx with a CUDA_R_16BF C, the float32
// sums and Beta·C (C widened) rounded to bfloat16 once on store
// (kernels.DinpRounder); under GEMMCublasLt such a product goes through
// cublasLtMatmul with C and D layouts of that type (throughLt), the same
// epilogue. The operands are *Buffer for Ops (a bfloat16 buffer
// holds two values an element, UploadBF16), or host slices in the tests
// that run the plans on the CPU shim.
type mm struct {
	C, A, B          any
	M, N, K          int
	LDC, LDA, LDB    int
	OffC, OffA, OffB int
	TransA, TransB   bool
	Beta             float32
	BF16             bool
	CBF16            bool
	TF32             bool
	Batch            int // 0 or 1: one product
	StrideA, StrideB int
	StrideC          int
	// Lt runs a BF16 product through cublasLtMatmul (Device.gemmLt) with
	// workspace LtWS instead of cublasGemmEx (Ops.SetGEMMLibrary).
	Lt   bool
	LtWS *Buffer
}

// lds returns the row strides, the dense ones where g leaves them 0.
func (g mm) lds() (lda, ldb, ldc int) {
	lda, ldb, ldc = g.LDA, g.LDB, g.LDC
	if lda == 0 {
		lda = g.K
		if g.TransA {
			lda = g.M
		}
	}
	if ldb == 0 {
		ldb = g.N
		if g.TransB {
			ldb = g.K
		}
	}
	if ldc == 0 {
		ldc = g.N
	}
	return lda, ldb, ldc
}

// colMajor maps g onto cuBLAS's column-major call as rowMajor does (the
// package doc): the column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, operands swapped, M and
// N swapped, each leading dimension the operand's row stride. Pointers are
// left to the caller.
func (g mm) colMajor() (Gemm, GemmTypes) {
	lda, ldb, ldc := g.lds()
	c := Gemm{M: g.N, N: g.M, K: g.K, Alpha: 1, Beta: g.Beta, LDA: ldb, LDB: lda, LDC: ldc, Batch: 1}
	if g.Batch > 1 {
		c.Batch = g.Batch
		c.StrideA, c.StrideB, c.StrideC = int64(g.StrideB), int64(g.StrideA), int64(g.StrideC)
	}
	c.TransA, c.TransB = OpN, OpN
	if g.TransB {
		c.TransA = OpT
	}
	if g.TransA {
		c.TransB = OpT
	}
	t := GemmTypes{A: R32F, B: R32F, C: R32F, Compute: Compute32F}
	if g.BF16 {
		t.A, t.B = R16BF, R16BF
	}
	if g.CBF16 {
		t.C = R16BF
	}
	if g.TF32 {
		t.Compute = Compute32FFastTF32
	}
	return c, t
}

// xstep is one step of those plans: a kernel launch (k) or a GEMM (g).
type xstep struct {
	k *step
	g *mm
}

func kstep(s ...step) []xstep {
	out := make([]xstep, len(s))
	for i := range s {
		out[i] = xstep{k: &s[i]}
	}
	return out
}

func gstep(g mm) xstep { return xstep{g: &g} }

// runX runs the steps in order: kernels as run does, GEMMs on cuBLAS.
func (o *Ops) runX(op string, steps []xstep) error {
	for _, s := range steps {
		if s.k != nil {
			if err := o.run(op, []step{*s.k}); err != nil {
				return err
			}
			continue
		}
		if err := o.d.gemmRows(*s.g); err != nil {
			return fmt.Errorf("CUDA %s: %w", op, err)
		}
	}
	return nil
}

// gemmRows runs one mm on the device's buffers.
func (d *Device) gemmRows(g mm) error {
	c, t := g.colMajor()
	if g.TF32 && (g.BF16 || c.Batch > 1) {
		return fmt.Errorf("GEMM M=%d N=%d K=%d: TF32 is for one product of float32 operands", g.M, g.N, g.K)
	}
	if g.CBF16 && (!g.BF16 || c.Batch > 1) {
		return fmt.Errorf("GEMM M=%d N=%d K=%d: a bfloat16 C is for one product of bfloat16 operands", g.M, g.N, g.K)
	}
	bufs := [3]*Buffer{g.C.(*Buffer), g.A.(*Buffer), g.B.(*Buffer)}
	if err := d.sameDevice("GEMM", bufs[:]...); err != nil {
		return err
	}
	ab := t.A.Bytes()
	// cuBLAS's A is the row-major B, its B the row-major A.
	c.A = bufs[2].ptr + DevPtr(ab*g.OffB)
	c.B = bufs[1].ptr + DevPtr(ab*g.OffA)
	cb := t.C.Bytes()
	c.C = bufs[0].ptr + DevPtr(cb*g.OffC)
	err := d.do(func() error {
		for _, x := range bufs {
			if err := x.checkLive(); err != nil {
				return err
			}
		}
		switch {
		case g.Lt && g.BF16:
			return d.gemmLt(c, t, g.LtWS)
		case g.BF16 && c.Batch > 1:
			return d.blas.GemmStridedBatchedEx(d.handle, c, t)
		case g.BF16, g.TF32:
			return d.blas.GemmEx(d.handle, c, t)
		case c.Batch > 1:
			return d.blas.SgemmStridedBatched(d.handle, c)
		}
		return d.blas.Sgemm(d.handle, c)
	})
	if err != nil {
		if c.Batch > 1 {
			return fmt.Errorf("GEMM batch=%d M=%d N=%d K=%d: %w", c.Batch, g.M, g.N, g.K, err)
		}
		return fmt.Errorf("GEMM M=%d N=%d K=%d: %w", g.M, g.N, g.K, err)
	}
	return nil
}

// SetPrecision sets the arithmetic of the products on frozen bfloat16
// weights (LinearForwardBF16, LinearBackwardBF16, LogprobForwardBF16,
// LogprobBackwardBF16), as kernels.Precision describes:
//
//   - kernels.PrecisionF32 (the default): exact. The weight rows are
//     widened to float32 a chunk at a time (bf16_to_f32, into a scratch
//     buffer of at most bf16ScratchFloats) and multiplied by cublasSgemm:
//     the float32 op on the widened weight, bit for bit what ref computes
//     up to the order of float32 sums.
//   - kernels.PrecisionBF16: the float32 operand is rounded to bfloat16
//     (f32_to_bf16, nearest even, into a scratch buffer) and multiplied by
//     the bfloat16 weight with cublasGemmEx (CUDA_R_16BF operands,
//     CUBLAS_COMPUTE_32F: bf16 tensor cores, float32 accumulation). The
//     training attention (AttentionForward, AttentionWindowForward and
//     their backward) runs on bf16 tensor cores too, attention_tc.cu, for
//     head dims a multiple of 16 up to 128 (attnTC).
//
// Call it before the ops run; it is not safe concurrently with them.
func (o *Ops) SetPrecision(p kernels.Precision) error {
	if p != kernels.PrecisionF32 && p != kernels.PrecisionBF16 {
		return fmt.Errorf("CUDA Ops: unknown compute precision %v", p)
	}
	o.prec = p
	return nil
}

// Precision returns the precision SetPrecision set.
func (o *Ops) Precision() kernels.Precision { return o.prec }

// bf16ScratchFloats bounds the float32 scratch of the exact mode's widened
// weight chunks (32 MiB).
const bf16ScratchFloats = 1 << 23

// bf16ChunkRows is the number of weight rows of C values widened at once.
func bf16ChunkRows(C int) int { return max(1, bf16ScratchFloats/max(C, 1)) }

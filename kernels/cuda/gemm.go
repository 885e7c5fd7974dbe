package cuda

import (
	"fmt"

	"github.com/hone-rl/hone/kernels"
)

// rowMajor maps the row-major product c[M,N] = op(a)·op(b) + beta·c
// (kernels.Backend.Matmul's contract) onto cuBLAS's column-major call, as
// the column-major cᵀ = op(b)ᵀ·op(a)ᵀ (see the package doc): the operands
// swap places, M and N swap, and each operand's leading dimension is its
// row length as stored. The pointers and strides are left to the caller.
func rowMajor(M, N, K int, transA, transB bool, beta float32) Gemm {
	g := Gemm{M: N, N: M, K: K, Alpha: 1, Beta: beta, LDC: N, Batch: 1}
	// cuBLAS's first operand is b: stored [K,N] (ld N), or [N,K] (ld K) when transB.
	g.TransA, g.LDA = OpN, N
	if transB {
		g.TransA, g.LDA = OpT, K
	}
	// Its second operand is a: stored [M,K] (ld K), or [K,M] (ld M) when transA.
	g.TransB, g.LDB = OpN, K
	if transA {
		g.TransB, g.LDB = OpT, M
	}
	return g
}

// sameDevice fails unless every buffer was allocated on d.
func (d *Device) sameDevice(op string, bufs ...*Buffer) error {
	for _, b := range bufs {
		if b.d != d {
			return fmt.Errorf("CUDA %s: a buffer of another device", op)
		}
	}
	return nil
}

// Matmul computes c = op(a)·op(b) + beta·c for row-major matrices on the
// device, with kernels.Backend.Matmul's contract (shapes there; beta 0
// ignores c's old contents): one cublasSgemm call, exact f32.
func (d *Device) Matmul(c, a, b *Buffer, M, N, K int, transA, transB bool, beta float32) error {
	return d.matmul(c, a, b, M, N, K, transA, transB, beta, false)
}

// MatmulTF32 is Matmul on the tensor cores: one cublasGemmEx with float32
// A, B and C and CUBLAS_COMPUTE_32F_FAST_TF32, which lets cuBLAS round the
// operands to TF32 (8 exponent and 10 mantissa bits) as they enter the
// product and accumulate in float32. The operands stay float32 in memory.
// Backend.Matmul runs it in the bf16 precision.
func (d *Device) MatmulTF32(c, a, b *Buffer, M, N, K int, transA, transB bool, beta float32) error {
	return d.matmul(c, a, b, M, N, K, transA, transB, beta, true)
}

// matmul is Matmul, or MatmulTF32 when tf32.
func (d *Device) matmul(c, a, b *Buffer, M, N, K int, transA, transB bool, beta float32, tf32 bool) error {
	kernels.NeedSizes("Matmul", M, N, K)
	kernels.Need("Matmul", "c", c.Len(), M*N)
	kernels.Need("Matmul", "a", a.Len(), M*K)
	kernels.Need("Matmul", "b", b.Len(), K*N)
	if err := d.sameDevice("Matmul", c, a, b); err != nil {
		return err
	}
	g := rowMajor(M, N, K, transA, transB, beta)
	g.A, g.B, g.C = b.ptr, a.ptr, c.ptr
	err := d.do(func() error {
		for _, x := range []*Buffer{c, a, b} {
			if err := x.checkLive(); err != nil {
				return err
			}
		}
		if tf32 {
			return d.blas.GemmEx(d.handle, g, GemmTypes{A: R32F, B: R32F, C: R32F, Compute: Compute32FFastTF32})
		}
		return d.blas.Sgemm(d.handle, g)
	})
	if err != nil {
		return fmt.Errorf("CUDA Matmul M=%d N=%d K=%d: %w", M, N, K, err)
	}
	return nil
}

// MatmulBatched is Matmul on batch products stored one after the other
// (kernels.Backend.MatmulBatched's contract): one
// cublasSgemmStridedBatched call.
func (d *Device) MatmulBatched(c, a, b *Buffer, batch, M, N, K int, transA, transB bool, beta float32) error {
	kernels.NeedSizes("MatmulBatched", batch, M, N, K)
	kernels.Need("MatmulBatched", "c", c.Len(), batch*M*N)
	kernels.Need("MatmulBatched", "a", a.Len(), batch*M*K)
	kernels.Need("MatmulBatched", "b", b.Len(), batch*K*N)
	if err := d.sameDevice("MatmulBatched", c, a, b); err != nil {
		return err
	}
	g := rowMajor(M, N, K, transA, transB, beta)
	g.A, g.StrideA = b.ptr, int64(K*N)
	g.B, g.StrideB = a.ptr, int64(M*K)
	g.C, g.StrideC = c.ptr, int64(M*N)
	g.Batch = batch
	err := d.do(func() error {
		for _, x := range []*Buffer{c, a, b} {
			if err := x.checkLive(); err != nil {
				return err
			}
		}
		return d.blas.SgemmStridedBatched(d.handle, g)
	})
	if err != nil {
		return fmt.Errorf("CUDA MatmulBatched batch=%d M=%d N=%d K=%d: %w", batch, M, N, K, err)
	}
	return nil
}

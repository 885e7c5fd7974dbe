//go:build cgo

package cpu

/*
#cgo LDFLAGS: -lopenblas
#include <cblas.h>
*/
import "C"

import "unsafe"

// openblasGEMM is cblas_sgemm in cgo builds (nil in gemm_nocgo.go).
func openblasGEMM() sgemmFunc { return openblasSgemm }

// openblasThreads is the number of threads OpenBLAS uses inside one call
// (read, never set: OPENBLAS_NUM_THREADS is the user's to choose).
func openblasThreads() int { return int(C.openblas_get_num_threads()) }

// openblasSgemm calls cblas_sgemm (row-major). Slices are non-empty: the
// caller quick-returns on empty shapes.
func openblasSgemm(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	ta, tb := C.enum_CBLAS_TRANSPOSE(C.CblasNoTrans), C.enum_CBLAS_TRANSPOSE(C.CblasNoTrans)
	if tA {
		ta = C.CblasTrans
	}
	if tB {
		tb = C.CblasTrans
	}
	C.cblas_sgemm(C.CblasRowMajor, ta, tb, C.blasint(m), C.blasint(n), C.blasint(k),
		C.float(alpha), (*C.float)(unsafe.Pointer(&a[0])), C.blasint(lda),
		(*C.float)(unsafe.Pointer(&b[0])), C.blasint(ldb),
		C.float(beta), (*C.float)(unsafe.Pointer(&c[0])), C.blasint(ldc))
}

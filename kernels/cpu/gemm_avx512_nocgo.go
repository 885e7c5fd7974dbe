//go:build !cgo

package cpu

// The AVX-512 kernels are C intrinsics: without cgo none is offered, and
// the ops use their Go loops.

func hasAVX512() bool { return false }

func avx512GEMM() (sgemmFunc, sgemmB16Func) { return nil, nil }

func avx512Vec() vecKernels { return vecKernels{} }

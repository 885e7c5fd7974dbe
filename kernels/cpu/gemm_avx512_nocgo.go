//go:build !cgo

package cpu

// avx512 needs cgo (C intrinsics): without it pickGEMM never offers it.
var avx512 sgemmFunc

//go:build !cgo

package cpu

// openblas is unavailable without cgo: pickGEMM falls back to gonum.
var openblas sgemmFunc

// openblasThreads is 0 without OpenBLAS.
func openblasThreads() int { return 0 }

//go:build !cgo

package cpu

// openblasGEMM is nil without cgo: pickGEMM falls back to gonum.
func openblasGEMM() sgemmFunc { return nil }

// openblasThreads is 0 without OpenBLAS.
func openblasThreads() int { return 0 }

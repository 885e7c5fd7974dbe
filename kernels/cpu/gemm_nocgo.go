//go:build !cgo

package cpu

// openblas is unavailable without cgo: pickGEMM falls back to gonum.
var openblas sgemmFunc

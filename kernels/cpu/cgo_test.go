//go:build cgo

package cpu_test

func gemms() []string { return []string{"openblas", "gonum"} }

const cgoBuild = true

//go:build !cgo

package cpu_test

func gemms() []string { return []string{"gonum"} }

const cgoBuild = false

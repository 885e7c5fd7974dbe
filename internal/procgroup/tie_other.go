//go:build unix && !linux

package procgroup

import "syscall"

// tieToParent does nothing where there is no parent-death signal: a
// program outlives a command killed without its clean-up there.
func tieToParent(*syscall.SysProcAttr) {}

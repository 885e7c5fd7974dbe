//go:build !unix

package stdio

import "os/exec"

// ownGroup does nothing where there are no Unix process groups: only the
// program itself is stopped there, not what it started.
func ownGroup(cmd *exec.Cmd) {}

// killGroup kills the program.
func killGroup(cmd *exec.Cmd) error { return cmd.Process.Kill() }

//go:build !unix

package procgroup

import "os/exec"

// Own does nothing where there are no Unix process groups: only the
// program itself is stopped there, not what it started.
func Own(cmd *exec.Cmd) {}

// Kill kills the program.
func Kill(cmd *exec.Cmd) error { return cmd.Process.Kill() }

// Terminate kills the program: without Unix signals there is no asking.
func Terminate(cmd *exec.Cmd) error { return cmd.Process.Kill() }

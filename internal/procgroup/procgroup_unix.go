//go:build unix

package procgroup

import (
	"errors"
	"os/exec"
	"syscall"
)

// Own makes cmd, not yet started, start in a process group of its own,
// whose id is its pid, so that Kill reaches what it starts too. Where the
// system can (Linux), the program is also killed when the command dies
// without its clean-up (SIGKILL, the OOM killer): tieToParent.
func Own(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	tieToParent(cmd.SysProcAttr)
}

// Kill kills every process in the process group of cmd, started after
// Own: the program and whatever it started that stayed in the group. A
// group with nobody left is no error.
func Kill(cmd *exec.Cmd) error {
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil // all of them exited already
	}
	if err != nil {
		// The group cannot be signalled (not ours after all): at least
		// the program itself is stopped.
		return errors.Join(err, cmd.Process.Kill())
	}
	return nil
}

// Terminate asks every process in the process group of cmd, started after
// Own, to stop (SIGTERM), as Kubernetes stops a pod before its grace
// period ends; Kill after the grace period stops what is left. A group with
// nobody left is no error.
func Terminate(cmd *exec.Cmd) error {
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

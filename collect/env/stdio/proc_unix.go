//go:build unix

package stdio

import (
	"errors"
	"os/exec"
	"syscall"
)

// ownGroup makes cmd start in a process group of its own, whose id is
// its pid, so that killGroup reaches what it starts too: a program run
// behind a wrapper (sh -c, uv run, npx) is the wrapper's child, and
// killing only the wrapper would leave a hung program running, orphaned,
// after its episode.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills every process in cmd's process group: the program and
// whatever it started that stayed in the group.
func killGroup(cmd *exec.Cmd) error {
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

//go:build linux

package procgroup

import (
	"errors"
	"os/exec"
	"time"

	"golang.org/x/sys/unix"
)

// Stop gives cmd's program, started after Own and asked to end (its stdin
// closed), up to grace to exit, then kills its whole process group
// whether the program exited or not, and returns Wait's error. A wrapper
// that exits at once leaves its child in the group; that child is killed
// too. The program is waited for without being reaped (WNOWAIT) until the
// group is killed: while it is a zombie its pid, the group's id, is no
// one else's, so the signal cannot reach a group a new process took.
func Stop(cmd *exec.Cmd, grace time.Duration) error {
	if cmd.Process == nil {
		return errNotStarted
	}
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		var info unix.Siginfo
		for {
			err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
			if !errors.Is(err, unix.EINTR) {
				return
			}
		}
	}()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-exited:
	case <-t.C:
	}
	kerr := Kill(cmd)
	return errors.Join(cmd.Wait(), kerr)
}

//go:build !linux

package procgroup

import (
	"errors"
	"os/exec"
	"time"
)

// Stop gives cmd's program, started after Own and asked to end (its stdin
// closed), up to grace to exit, then kills its whole process group
// whether the program exited or not, and returns Wait's error. A wrapper
// that exits at once leaves its child in the group; that child is killed
// too. Without waitid's WNOWAIT the program is reaped before its group is
// killed: the group's id names this group while any of it lives, and only
// an empty group's id could be taken by a new group leader meanwhile.
func Stop(cmd *exec.Cmd, grace time.Duration) error {
	if cmd.Process == nil {
		return errNotStarted
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case err := <-exited:
		return errors.Join(err, Kill(cmd))
	case <-t.C:
		kerr := Kill(cmd)
		return errors.Join(<-exited, kerr)
	}
}

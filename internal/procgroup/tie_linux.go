package procgroup

import "syscall"

// tieToParent has the kernel kill the program when the command that
// started it dies (the parent-death signal): a command killed with
// SIGKILL runs no clean-up, and the program, in a group of its own that
// no terminal signal reaches, ran on, orphaned, hung in its episode.
// SIGKILL, since a program may ignore SIGTERM. The signal comes when the
// OS thread that started the program exits; Go keeps its threads for the
// life of the process, except one a goroutine locked and exited without
// unlocking, which no caller of Own does. Only the program itself is
// signalled: what it started stays, as Kill reaches it only while the
// command lives.
func tieToParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

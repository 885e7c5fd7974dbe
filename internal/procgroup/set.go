package procgroup

import (
	"context"
	"errors"
	"os/exec"
	"sync"
)

// Set holds the programs a command has running in process groups of their
// own, so that a command exiting at once (a second Ctrl-C, which skips
// the clean-up that would close them) still stops them: the terminal's
// Ctrl-C reaches only the foreground process group, not theirs, and they
// would run on, orphaned. A nil *Set tracks nothing. Safe for concurrent
// use.
type Set struct {
	mu     sync.Mutex
	cmds   map[*exec.Cmd]struct{}
	killed bool
}

// NewSet returns an empty set.
func NewSet() *Set { return &Set{cmds: map[*exec.Cmd]struct{}{}} }

// setKey is the context key of the Set: the command's set reaches the
// packages that start programs through the context they are given.
type setKey struct{}

// WithSet returns ctx carrying s.
func WithSet(ctx context.Context, s *Set) context.Context {
	return context.WithValue(ctx, setKey{}, s)
}

// SetFrom returns the Set ctx carries, or nil.
func SetFrom(ctx context.Context) *Set {
	s, _ := ctx.Value(setKey{}).(*Set)
	return s
}

// ErrStopping: the set's programs were killed, the command is exiting, and
// no program is started any more.
var ErrStopping = errors.New("procgroup: the command is exiting; no program is started")

// Start calls start, which starts cmd (given Own before), and adds cmd to
// the set. The set is locked meanwhile, so that KillAll either finds cmd
// started or keeps it from starting: a program started just as the
// command exits is not missed.
func (s *Set) Start(cmd *exec.Cmd, start func() error) error {
	if s == nil {
		return start()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.killed {
		return ErrStopping
	}
	if err := start(); err != nil {
		return err
	}
	if cmd.Process != nil {
		s.cmds[cmd] = struct{}{}
	}
	return nil
}

// Forget removes cmd once it was waited for: its group id may be reused
// once the group is empty, and KillAll must not reach someone else's.
func (s *Set) Forget(cmd *exec.Cmd) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.cmds, cmd)
}

// KillAll kills the process group of every program in the set and keeps
// any more from starting. It returns the errors of the groups that could
// not be signalled.
func (s *Set) KillAll() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killed = true
	var errs []error
	for cmd := range s.cmds {
		errs = append(errs, Kill(cmd))
	}
	return errors.Join(errs...)
}

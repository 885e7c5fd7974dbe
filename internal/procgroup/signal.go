package procgroup

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// SignalContext returns a context, carrying a Set of its own (WithSet),
// that is cancelled with cause on the first SIGINT or SIGTERM. A second
// signal exits the process at once with exitCode, for the user whose
// clean-up hangs; the programs started in process groups of their own
// through the Set are killed first, since no Ctrl-C reaches their groups
// and they would run on, orphaned. notice, if not nil, receives one line
// per signal. stop releases the signal handler and cancels the context.
//
// The hone commands (cmd/internal/cli) and the cluster manifests' local
// runner share it, so a second Ctrl-C means the same in both.
func SignalContext(parent context.Context, notice io.Writer, cause error, exitCode int) (ctx context.Context, stop func()) {
	progs := NewSet()
	ctx, cancel := context.WithCancelCause(WithSet(parent, progs))
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	say := func(format string, args ...any) {
		if notice != nil {
			fmt.Fprintf(notice, format, args...)
		}
	}
	go func() {
		select {
		case sig := <-ch:
			say("received %v: stopping (send it again to exit at once)\n", sig)
			cancel(cause)
		case <-done:
			return
		}
		select {
		case sig := <-ch:
			say("received %v again: exiting without clean-up\n", sig)
			if err := progs.KillAll(); err != nil {
				say("stopping the programs started: %v\n", err)
			}
			os.Exit(exitCode)
		case <-done:
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
			cancel(context.Canceled)
		})
	}
	return ctx, stop
}

package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/internal/flagval"
	"github.com/hone-rl/hone/train/checkpoint"
	"github.com/spf13/pflag"
)

// remoteAdapters follows an adapters folder in object storage: with
// --adapters naming one (s3://bucket/adapters), the steps that hone-train
// published are pulled into a local folder (--adapters-cache) every
// --poll-interval, each step whole before latest moves (runfolder.Pull),
// and serve watches that folder as it would a local one: the embedded
// engine loads from it, and with --upstream the vLLM front has vLLM load
// from it (so vLLM must read --adapters-cache at the same absolute path).
// A temporary folder (no --adapters-cache) is removed when the server stops.
// Optimizer state is not pulled; of a run's new steps, the newest
// --max-adapters are. A run that cannot be pulled is logged and passed
// over; the other runs are pulled. The store's listing, and each run's
// pull, is abandoned after --poll-timeout: a store that takes the
// connection and never answers held the poller for ever, so serving
// stayed on the steps pulled before with no word. The deadline is not the
// whole poll's, which one stuck or large run would use up, leaving the
// runs after it never pulled.
type remoteAdapters struct {
	cache        string
	timeout      time.Duration // 0 (a remoteAdapters made in code): defaultPollTimeout
	timeoutGiven bool          // --poll-timeout was on the command line
}

// defaultPollTimeout is --poll-timeout's default, as hone-train's
// --publish-timeout's: far longer than a pull of a few LoRA steps takes,
// so that only a store that stopped answering reaches it.
const defaultPollTimeout = 10 * time.Minute

func (r *remoteAdapters) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&r.cache, "adapters-cache", "", "with --adapters s3://…: the local folder steps are pulled into (default: a new temporary folder, removed when the server stops); with --upstream, vLLM must read it at the same absolute path")
	flagval.PositiveDuration(fs, &r.timeout, "poll-timeout", defaultPollTimeout, "with --adapters s3://…: wall time for the store's listing, and for each run's pull of its new steps, at each poll; one that takes longer (a store that stopped answering) is abandoned with a warning and tried again at the next --poll-interval, the steps pulled before serving meanwhile (a run's: the other runs are pulled); a listing abandoned at start fails the server")
}

// start pulls once, points the adapters folder at the local copy and keeps
// pulling until ctx ends. A local --adapters (a path or a file:// URL) is
// watched where it is.
func (r *remoteAdapters) start(ctx context.Context, adapters *string, every time.Duration, newest int, log *slog.Logger) (stop func(), err error) {
	if !fileset.IsURL(*adapters) {
		if r.cache != "" {
			return nil, cli.Usagef("--adapters-cache needs --adapters to name an object-store folder (s3://…)")
		}
		if r.timeoutGiven {
			return nil, cli.Usagef("--poll-timeout needs --adapters to name an object-store folder (s3://…): a local folder is watched, not pulled")
		}
		p, err := fileset.LocalPath(*adapters) // a file:// URL is watched as its path
		if err != nil {
			return nil, cli.Usagef("--adapters: %v", err)
		}
		*adapters = p
		return func() {}, nil
	}
	remote := *adapters
	// shown is remote as the log names it: a password in its query masked.
	shown := fileset.RedactURL(remote)
	cache := r.cache
	temporary := cache == ""
	if temporary {
		if cache, err = os.MkdirTemp("", "hone-serve-adapters-*"); err != nil {
			return nil, err
		}
		log.Info("pulling adapters into a temporary folder (set --adapters-cache to choose it)", "from", shown, "into", cache)
	} else if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, err
	}
	// removeTemporary removes a temporary folder of ours: it holds only
	// copies of what the store holds. An --adapters-cache the user named
	// stays.
	removeTemporary := func() {
		if temporary {
			if err := os.RemoveAll(cache); err != nil {
				log.Warn("could not remove the temporary adapters folder", "dir", cache, "err", err)
			}
		}
	}
	warned := newRunWarnings(log)
	timeout := cmp.Or(r.timeout, defaultPollTimeout)
	pull := func(ctx context.Context) error {
		var runs []string
		err := cutOff(ctx, timeout, func(ctx context.Context) (err error) {
			runs, err = fileset.ListDirs(ctx, remote)
			return err
		})
		if err != nil {
			return fmt.Errorf("list %s: %w", shown, err)
		}
		names := map[string]bool{}
		for _, run := range runs {
			name, _, _ := strings.Cut(run, "?")
			name = path.Base(name)
			if !runfolder.ValidRun(name) {
				continue
			}
			names[name] = true
			steps, err := pullRun(ctx, run, filepath.Join(cache, name), newest, timeout, func(step int, why error) {
				warned.leftOutStep(name, step, why)
			}, func(was, now int) {
				log.Warn("the store's run is not the one pulled before (deleted and published anew under its name): the copy is replaced by the store's", "run", name, "was", runfolder.StepName(was), "now", runfolder.StepName(now))
			})
			if err != nil {
				if ctx.Err() != nil {
					return err
				}
				// One run that cannot be pulled (its latest names a step
				// it lacks) must not keep the others from being served
				// and updated: it is passed over, as a local adapters
				// folder's broken run is, and tried at the next poll.
				warned.failed(name, run, err)
				continue
			}
			warned.pulled(name)
			if len(steps) > 0 {
				log.Info("pulled adapter steps", "run", name, "steps", steps, "into", cache)
			}
		}
		warned.forget(names)
		return nil
	}
	if err := pull(ctx); err != nil {
		removeTemporary()
		if errors.Is(err, fileset.ErrNoBucket) {
			// Nothing in the set-up (docs/cluster.md, serve.yaml) makes a
			// bucket after the server starts: one that is not there now is
			// a mistyped URL, bad input (exit 2), not a store failure to
			// retry. A bucket that goes later is warned about at the polls.
			return nil, cli.BadInputf("--adapters: %w; correct the URL or create the bucket", err)
		}
		return nil, err
	}
	*adapters = cache
	if every <= 0 {
		every = time.Second
	}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		pollAdapters(pctx, every, pull, remote, log)
	}()
	return func() {
		cancel()
		<-done
		removeTemporary()
	}, nil
}

// runWarnings holds what the polls warned about of each run, so that each
// is warned about once, not at every poll (a second by default) for as
// long as it stays so, and forgets it once it no longer can: its entries
// would otherwise grow for the server's life with every run and step
// that ever failed. The polls run on one goroutine at a time.
type runWarnings struct {
	log *slog.Logger
	// broken holds the runs that could not be pulled at their last try,
	// which stay so for good when their trainer is gone.
	broken map[string]bool
	// leftOut holds, by run, the steps a pull left out because the store
	// held them in part: Pull passes over such a step without failing,
	// and nothing said it had.
	leftOut map[string]map[int]bool
}

func newRunWarnings(log *slog.Logger) *runWarnings {
	return &runWarnings{log: log, broken: map[string]bool{}, leftOut: map[string]map[int]bool{}}
}

// leftOutStep warns of a step of run left out, once.
func (w *runWarnings) leftOutStep(run string, step int, why error) {
	if w.leftOut[run][step] {
		return
	}
	if w.leftOut[run] == nil {
		w.leftOut[run] = map[int]bool{}
	}
	w.leftOut[run][step] = true
	w.log.Warn("left out a step the store holds in part (being pruned by its trainer, or broken by hand); the run's other steps are pulled", "run", run, "step", step, "err", why)
}

// failed warns of a run that cannot be pulled from remote, once until it
// pulls. Its left-out steps are kept: the next try meets them again.
func (w *runWarnings) failed(run, remote string, err error) {
	if !w.broken[run] {
		w.log.Warn("cannot pull the run; the steps pulled before keep serving, tried at each poll, not warned about again until it pulls", "run", run, "from", fileset.RedactURL(remote), "err", err)
	}
	w.broken[run] = true
}

// pulled says that run pulls again, if it was broken, and forgets its
// left-out steps: the copy's latest has moved past them, and a pull
// copies only steps after it.
func (w *runWarnings) pulled(run string) {
	if w.broken[run] {
		w.log.Info("the run pulls again", "run", run)
		delete(w.broken, run)
	}
	delete(w.leftOut, run)
}

// forget drops the runs no longer listed (deleted from the store): a run
// of the same name made later is another, warned about anew.
func (w *runWarnings) forget(listed map[string]bool) {
	for run := range w.broken {
		if !listed[run] {
			delete(w.broken, run)
		}
	}
	for run := range w.leftOut {
		if !listed[run] {
			delete(w.leftOut, run)
		}
	}
}

// pullRun pulls a run's newest steps, without optimizer state, into dst,
// abandoned after timeout. The deadline is each run's, not the poll's: one
// run whose folder hangs, or whose pull takes longer, is passed over by
// the caller, not the runs after it too at every poll. leftOut is told of
// each step left out as the store holds it in part (PullOptions.LeftOut),
// and replaced of a copy replaced by a run published anew under its name
// (PullOptions.Mirror: the cache holds copies only).
func pullRun(ctx context.Context, run, dst string, newest int, timeout time.Duration, leftOut func(step int, why error), replaced func(was, now int)) (steps []int, err error) {
	err = cutOff(ctx, timeout, func(ctx context.Context) (err error) {
		steps, err = runfolder.Pull(ctx, run, dst, runfolder.PullOptions{
			Skip:     func(f string) bool { return f == checkpoint.OptimizerName },
			Newest:   newest,
			LeftOut:  leftOut,
			Mirror:   true,
			Replaced: replaced,
		})
		return err
	})
	return steps, err
}

// cutOff calls call abandoned after timeout: a store that takes the
// connection and never answers held a poll for ever. The error of one cut
// off says so (the caller names the store or run): the store's own error
// is a request cut off, which does not say why.
func cutOff(ctx context.Context, timeout time.Duration, call func(context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := call(cctx)
	if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("abandoned after --poll-timeout %v: %w", timeout, err)
	}
	return err
}

// pollAdapters calls pull (start's poll of the store) every period until
// ctx ends.
func pollAdapters(ctx context.Context, every time.Duration, pull func(context.Context) error, remote string, log *slog.Logger) {
	shown := fileset.RedactURL(remote)
	t := time.NewTicker(every)
	defer t.Stop()
	// failing: the last poll failed as a whole (the store
	// unreachable, its listing refused). Warned about once, when it
	// starts, not at every poll while the store stays so; the
	// error's text is no guide to "the same failure" (a store's
	// request id changes each time).
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			err := pull(ctx)
			switch {
			case ctx.Err() != nil:
			case err != nil && !failing:
				log.Warn("pulling adapters failed; tried at each poll, not warned about again until it pulls", "from", shown, "err", err)
				failing = true
			case err == nil && failing:
				log.Info("pulling adapters works again", "from", shown)
				failing = false
			}
		}
	}
}

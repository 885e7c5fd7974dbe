package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/internal/flagval"
	"github.com/hone-rl/hone/train/checkpoint"
	"github.com/hone-rl/hone/train/trainer"
	"github.com/spf13/pflag"
)

// remoteOut publishes a run folder to object storage: with --out naming
// an object-store folder (s3://bucket/adapters), the run is written in a
// local folder (--out-cache) and each saved step is uploaded, latest last
// (runfolder.Publish), every --publish-every and once at the end. Before
// training, what the store holds of the run is pulled into the local
// folder, so --resume continues a published run on a fresh machine, and
// a write is tried (runfolder.CheckWritable), so a store that refuses
// this writer fails the call before it trains. A publish that fails at a
// tick is retried at the next, and warned about as publishFailures says;
// one that fails at the end fails the run. Each publish is abandoned after
// --publish-timeout: a store that takes the connection and never answers
// held the publisher, so nothing more was published for the rest of the
// run, and held the last publish, so the trainer never exited. A temporary
// local folder (no --out-cache) is removed once the last upload succeeds.
type remoteOut struct {
	cache   string
	every   time.Duration
	timeout time.Duration // 0 (a remoteOut made in code): defaultPublishTimeout
}

// defaultPublishTimeout is --publish-timeout's default: far longer than a
// publish of a few LoRA steps takes, so that only a store that stopped
// answering reaches it.
const defaultPublishTimeout = 10 * time.Minute

func (r *remoteOut) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&r.cache, "out-cache", "", "with --out s3://…: the local folder the run folders are written in before upload (default: a new temporary folder, removed once everything is published)")
	fs.DurationVar(&r.every, "publish-every", 30*time.Second, "with --out s3://…: how often saved steps are uploaded (and once at the end)")
	flagval.PositiveDuration(fs, &r.timeout, "publish-timeout", defaultPublishTimeout, "with --out s3://…: wall time for one upload of the saved steps, and for each call to the store at start (its listing, a write check, the pull of the published run); an upload that takes longer (a store that stopped answering) is abandoned, retried at the next --publish-every, and at the end fails the run; a call at start that does fails the call")
}

// check refuses r's flags, and an --out that names no folder, as usage
// errors: it touches nothing, so runJob calls it before it opens the
// backend (a CUDA device) and start pulls or trains.
func (r *remoteOut) check(o *trainer.Options) error {
	if r.every <= 0 {
		// The publisher's ticker takes no other: refused here, before
		// anything is pulled, rather than a panic once training began.
		return cli.Usagef("--publish-every %v must be positive", r.every)
	}
	if fileset.IsURL(o.Out) {
		return nil
	}
	if r.cache != "" {
		return cli.Usagef("--out-cache needs --out to name an object-store folder (s3://…)")
	}
	if _, err := fileset.LocalPath(o.Out); err != nil {
		return cli.Usagef("--out: %v", err)
	}
	return nil
}

// start points o.OutLocal at the local folder and starts publishing; finish
// stops it and publishes what is left. A local --out (a path or a file://
// URL) is written where it is.
func (r *remoteOut) start(ctx context.Context, o *trainer.Options, log *slog.Logger) (finish func(error) error, err error) {
	if err := r.check(o); err != nil {
		return nil, err
	}
	if !fileset.IsURL(o.Out) {
		p, err := fileset.LocalPath(o.Out) // a file:// URL is written as its path
		if err != nil {
			return nil, cli.Usagef("--out: %v", err)
		}
		o.Out = p
		return func(err error) error { return err }, nil
	}
	remote := fileset.Join(o.Out, o.Name)
	// shown is remote as the log names it: a password in its query masked.
	shown := fileset.RedactURL(remote)
	timeout := cmp.Or(r.timeout, defaultPublishTimeout)
	if err := checkStore(ctx, o.Out, remote, shown, timeout); err != nil {
		return nil, err
	}
	cache := r.cache
	temporary := cache == ""
	if temporary {
		if cache, err = os.MkdirTemp("", "hone-train-out-*"); err != nil {
			return nil, err
		}
	}
	local := filepath.Join(cache, o.Name)
	// The run's lock is taken before the pull, as a local run takes it
	// before it writes: with a shared --out-cache a second call pulled
	// into the live folder of a call still training, and found the lock
	// held only after. It is held until the last publish is done.
	unlock, err := (&checkpoint.Run{Dir: local}).Lock()
	if err != nil {
		if temporary {
			os.RemoveAll(cache)
		}
		return nil, err
	}
	var pulled []int
	err = storeCall(ctx, timeout, "pulling", shown, func(ctx context.Context) (err error) {
		// A step the store holds in part (pruned by the trainer before,
		// while this pull listed it, or a file removed by hand) is left
		// out, and said so: the run resumes without it, which a pull
		// passing over it in silence gave no clue of. Pull is called once,
		// so each step is named once.
		pulled, err = runfolder.Pull(ctx, remote, local, runfolder.PullOptions{LeftOut: func(step int, why error) {
			log.Warn("left out a step the store holds in part (being pruned, or broken by hand); the run's other steps are pulled", "run", o.Name, "from", shown, "step", step, "err", why)
		}})
		return err
	})
	if err != nil {
		unlock()
		// A temporary folder holds only what was pulled, which the store
		// still holds: it goes, or each failed call would leave one.
		if temporary {
			os.RemoveAll(cache)
		}
		return nil, err
	}
	o.RunLocked = true
	if len(pulled) > 0 {
		log.Info("pulled the published run", "from", shown, "to", local, "steps", pulled)
	}
	o.OutLocal = cache
	publish := func(ctx context.Context) error { return publishAttempt(ctx, local, remote, shown, timeout, log) }
	pctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// The tick publishes' warnings name the store: a trainer may
		// publish to one and read from another.
		r.publishTicks(pctx, publish, log.With("to", shown))
	}()
	return func(runErr error) error {
		defer unlock()
		stop()
		wg.Wait()
		// What was saved is published even after a failed or interrupted
		// run: its steps are whole.
		if err := publish(context.WithoutCancel(ctx)); err != nil {
			// The local folder holds the only copy of what is unpublished:
			// it stays, and the log says where.
			if runErr == nil {
				return fmt.Errorf("publish %s (the run stays in %s): %w", shown, local, err)
			}
			log.Error("publish failed", "to", shown, "run", local, "err", err)
			return runErr
		}
		// Everything is in the object store: a temporary folder of ours
		// goes (a copy of the whole run, left in /tmp by every call of a
		// cron job otherwise); an --out-cache the user named stays.
		if temporary {
			if err := os.RemoveAll(cache); err != nil {
				log.Warn("could not remove the temporary run folder", "dir", cache, "err", err)
			}
		}
		return runErr
	}, nil
}

// checkStore checks the store of --out (out; remote its run folder, shown
// as the log names it) before any training: that its bucket is there and
// that a write goes through.
func checkStore(ctx context.Context, out, remote, shown string, timeout time.Duration) error {
	// Pull takes a latest it cannot find for a run not published yet, and
	// so would a bucket that is not there (a typo): the run would train to
	// its end and fail only at its publish. A listing of a missing bucket
	// fails, of an empty folder does not.
	// Each start-up call to the store runs under --publish-timeout, as a
	// publish does: a store that takes the connection and never answers
	// held the start for ever, before any training.
	if err := storeCall(ctx, timeout, "listing", shown, func(ctx context.Context) error {
		_, err := fileset.ListDirs(ctx, remote)
		return err
	}); err != nil {
		if errors.Is(err, fileset.ErrNoBucket) {
			// No hone command or manifest makes a bucket: a missing one is
			// a mistyped --out, bad input (exit 2, not retried by
			// round.yaml or cron.yaml), as for hone-serve's --adapters.
			return cli.BadInputf("--out %s: %w; correct the URL or create the bucket", fileset.RedactURL(out), err)
		}
		if errors.Is(err, fileset.ErrNoCredentials) {
			// Missing keys fail each retry the same way, as for the
			// stages' -o (the error says what to set).
			return cli.BadInputf("--out %s: %w", fileset.RedactURL(out), err)
		}
		return fmt.Errorf("--out %s: %w", fileset.RedactURL(out), err)
	}
	// Credentials that may only read failed only the publish at the end
	// of the run (each earlier one warned and was retried): a write is
	// tried now, before any training.
	if err := storeCall(ctx, timeout, "checking a write to", shown, func(ctx context.Context) error {
		return runfolder.CheckWritable(ctx, remote)
	}); err != nil {
		return fmt.Errorf("--out %s: %w", fileset.RedactURL(out), err)
	}
	return nil
}

// storeCall runs call, a start-up call to the store shown (what says
// which), abandoned after timeout: a store that takes the connection and
// never answers held it for ever. The error of one cut off names the call,
// the store and the deadline; the store's own error is a request cut off.
func storeCall(ctx context.Context, timeout time.Duration, what, shown string, call func(context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := call(cctx)
	if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%s %s abandoned after --publish-timeout %v: %w", what, shown, timeout, err)
	}
	return err
}

// publishAttempt publishes the run folder local to remote (shown as the
// log names it) as runfolder.Publish does, abandoned after timeout: a
// store that takes the connection and never answers held the attempt for
// ever.
func publishAttempt(ctx context.Context, local, remote, shown string, timeout time.Duration, log *slog.Logger) error {
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	steps, err := runfolder.Publish(actx, local, remote)
	if len(steps) > 0 {
		log.Info("published", "to", shown, "steps", steps)
	}
	if err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
		// The store's own error is a request cut off, which does not say
		// why it was cut (the store is named by the caller).
		return fmt.Errorf("abandoned after --publish-timeout %v: %w", timeout, err)
	}
	return err
}

// publishTicks calls publish every r.every until ctx ends, and says when
// the attempts fail as publishFailures does.
func (r *remoteOut) publishTicks(ctx context.Context, publish func(context.Context) error, log *slog.Logger) {
	var fails publishFailures
	t := time.NewTicker(r.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			err := publish(ctx)
			if ctx.Err() != nil {
				return
			}
			fails.record(log, err)
		}
	}
}

// publishWarnCap is the most failed tick publishes between two warnings
// of the same error: with the default --publish-every of 30s, one every
// 16 minutes while the store stays broken.
const publishWarnCap = 32

// publishFailures says when the tick publishes fail, without a warning
// at each tick: a store that stays broken (its bucket deleted, the
// credentials revoked during training) filled a pod's log with one line
// every --publish-every. The first failure is warned about, then one of
// another error (step numbers and request ids aside: errorShape), else the same error
// after a count of failed attempts that doubles up to publishWarnCap; a
// success after failures says how many there were.
type publishFailures struct {
	n    int    // failed attempts since the last success
	next int    // the attempt that warns about the same error again
	last string // the error last seen
}

// record takes the outcome of one tick publish.
func (p *publishFailures) record(log *slog.Logger, err error) {
	if err == nil {
		if p.n > 0 {
			log.Info(fmt.Sprintf("published again after %d failed attempts", p.n), "failed_attempts", p.n)
		}
		*p = publishFailures{}
		return
	}
	p.n++
	msg := errorShape(err)
	if p.n == 1 || msg != p.last || p.n >= p.next {
		p.next = p.n + min(p.n, publishWarnCap)
		log.Warn("publish failed; retried at each tick and at the end", "err", err, "failed_attempts", p.n, "next_warning_at_attempt", p.next)
	}
	p.last = msg
}

// errorShape is err's message with what changes from one attempt of
// the same failure to the next put aside: the step numbers (the same
// refusal names the step it stopped at, which moves on as training does
// and as --keep-last prunes the earliest unpublished one), and the ids the
// store gives each request (S3's RequestID and HostID, letters and digits
// both, new in every answer). The rest stays as it is: a status code
// (StatusCode: 403, then 503) is another error to warn about. Before, each
// run of digits became one N, which hid a new status code and left a real
// S3's request ids apart, so every refusal there warned.
func errorShape(err error) string {
	msg := stepNumber.ReplaceAllString(err.Error(), "${1}N")
	return requestID.ReplaceAllString(msg, "${1}")
}

// stepNumber matches a step number as publish errors give it: a step
// folder's name (step-000012) or "step 12" in the text.
var stepNumber = regexp.MustCompile(`\b(step[- ])[0-9]+\b`)

// requestID matches the per-request ids in an AWS SDK error, up to the
// comma that ends each.
var requestID = regexp.MustCompile(`\b((?:RequestID|HostID): )[^,)]*`)

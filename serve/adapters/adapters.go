package adapters

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/train/model"
)

// ErrUnknown means a name resolves to no loaded adapter.
var ErrUnknown = errors.New("unknown adapter")

// Adapter is one loaded adapter step.
type Adapter struct {
	Run     string
	Step    int
	Dir     string
	Weights *model.Adapter
	Loaded  time.Time

	stamp stamp // the folder's files when they were read
}

// Name is the served name, "<run>@<step>".
func (a *Adapter) Name() string { return runfolder.ServedName(a.Run, a.Step) }

// Options configure a Registry.
type Options struct {
	Dir     string
	Config  *model.Config // the base model's, to check shapes
	MaxKeep int           // steps kept loaded per run: the current one and the most recently current others (default 2)
	Log     *slog.Logger
	// Backend is the model's backend: each adapter is placed on it as it
	// loads (model.Adapter.Place); nil leaves adapters in Go memory, which
	// only a host backend can read. A step dropped beyond MaxKeep is not
	// freed on the backend, since a request in flight may still use it: on
	// a backend that allocates its own memory each dropped step stays
	// allocated (small: the LoRA tensors).
	Backend kernels.Backend
}

// run is what the registry holds of one run.
type run struct {
	// steps are the loaded steps, least recently made current first.
	steps []*Adapter
	// current is what "<run>" means: the step latest names (else the newest
	// folder) once it loaded; a step that failed to load leaves it as it was.
	current *Adapter
}

// stamp summarises a folder's files so that a rewrite is noticed.
type stamp struct {
	mod  time.Time
	size int64
}

// Registry holds the loaded adapters. It is safe for concurrent use.
type Registry struct {
	o Options

	mu   sync.RWMutex
	runs map[string]*run

	pollMu sync.Mutex       // one Poll at a time; guards what follows
	closed bool             // Close ran: Poll loads nothing
	failed map[string]stamp // step dirs that failed, by real path, until they change
	// warned holds the warning last logged per condition ("" for the
	// adapters folder, else the run name), so that a condition that lasts
	// is logged once, and again only when it changes or comes back.
	warned map[string]string
}

// New returns an empty registry; call Poll or Watch to load adapters.
func New(o Options) *Registry {
	if o.MaxKeep <= 0 {
		o.MaxKeep = 2
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Registry{o: o, runs: map[string]*run{}, failed: map[string]stamp{}, warned: map[string]string{}}
}

// Resolve returns the adapter a model name asks for: "<run>" (the step the
// run's latest file names) or "<run>@<step>" (any loaded step). It fails
// with ErrUnknown for anything else.
func (r *Registry) Resolve(name string) (*Adapter, error) {
	want, err := runfolder.ParseServed(name)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnknown, err)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	rn := r.runs[want.Run]
	if rn == nil || rn.current == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknown, name)
	}
	if !want.HasStep {
		return rn.current, nil
	}
	for _, a := range rn.steps {
		if a.Step == want.Step {
			return a, nil
		}
	}
	return nil, fmt.Errorf("%w: %q (step %d is not loaded)", ErrUnknown, name, want.Step)
}

// Names lists "<run>" and "<run>@<step>" for every loaded adapter, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	for name, rn := range r.runs {
		if rn.current != nil {
			out = append(out, name)
		}
		for _, a := range rn.steps {
			out = append(out, a.Name())
		}
	}
	sort.Strings(out)
	return out
}

// Watch polls the folder every interval until ctx ends.
func (r *Registry) Watch(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.Poll(ctx)
		}
	}
}

// Poll brings every run in step with its folder: the step a run's latest
// file names (else its newest step folder) is loaded if it is not loaded or
// its folder changed, and becomes what "<run>" means. Failures are logged
// once per condition; it returns how many adapters it loaded.
func (r *Registry) Poll(ctx context.Context) int {
	r.pollMu.Lock()
	defer r.pollMu.Unlock()
	if r.closed {
		return 0
	}
	runs, err := runfolder.Runs(r.o.Dir)
	if err != nil {
		r.warnOnce("", "adapters: cannot read the adapters folder; serving what is loaded", "dir", r.o.Dir, "err", err)
		return 0
	}
	r.clearWarning("")
	loaded := 0
	for _, name := range runs {
		if ctx.Err() != nil {
			return loaded
		}
		if r.pollRun(name) {
			loaded++
		}
	}
	return loaded
}

// pollRun loads or switches to the current step of one run; it reports
// whether it loaded an adapter.
func (r *Registry) pollRun(name string) bool {
	step, err := runfolder.Locate(r.o.Dir, name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			r.clearWarning(name) // no step yet: nothing to say
		} else {
			r.warnOnce(name, "adapters: cannot use the run's current step; the previous one keeps serving", "run", name, "err", err)
		}
		return false
	}
	r.clearWarning(name)
	st := stampOf(step.Real)
	if a := r.loadedStep(name, step.N); a != nil && a.stamp == st {
		r.makeCurrent(name, a)
		return false
	}
	if f, ok := r.failed[step.Real]; ok && f == st {
		return false // refused before and unchanged since
	}
	w, err := model.ReadAdapter(step.Real, r.o.Config)
	if err == nil {
		err = checkFinite(w)
		if err != nil {
			err = fmt.Errorf("%s: %w", step.Dir, err)
		}
	}
	if err == nil && r.o.Backend != nil {
		err = w.Place(r.o.Backend)
	}
	if err != nil {
		r.failed[step.Real] = st
		r.o.Log.Error("adapters: refusing adapter; the previous one keeps serving", "dir", step.Dir, "err", err)
		return false
	}
	delete(r.failed, step.Real)
	a := &Adapter{Run: name, Step: step.N, Dir: step.Dir, Weights: w, Loaded: time.Now(), stamp: st}
	r.install(a)
	r.o.Log.Info("adapters: loaded", "model", a.Name(), "dir", step.Dir)
	return true
}

// Close frees the memory of every loaded adapter on Options.Backend and
// forgets them (Resolve fails afterwards; Poll loads nothing). Call it once
// nothing uses them: after the engine stopped.
func (r *Registry) Close() {
	r.pollMu.Lock()
	defer r.pollMu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rn := range r.runs {
		for _, a := range rn.steps {
			a.Weights.Free()
		}
	}
	r.runs, r.closed = map[string]*run{}, true
}

// loadedStep returns the loaded adapter of run's step n, or nil.
func (r *Registry) loadedStep(name string, n int) *Adapter {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if rn := r.runs[name]; rn != nil {
		for _, a := range rn.steps {
			if a.Step == n {
				return a
			}
		}
	}
	return nil
}

// makeCurrent points "<run>" at the loaded adapter a (a rolled-back latest
// file, say), and logs the switch.
func (r *Registry) makeCurrent(name string, a *Adapter) {
	r.mu.Lock()
	rn := r.runs[name]
	if rn.current == a {
		r.mu.Unlock()
		return
	}
	rn.current = a
	rn.steps = append(slices.DeleteFunc(rn.steps, func(b *Adapter) bool { return b == a }), a)
	r.mu.Unlock()
	r.o.Log.Info("adapters: serving a loaded step", "model", a.Name(), "dir", a.Dir)
}

// install adds a freshly loaded adapter as the run's current one, replacing
// an older load of the same step, and drops the least recently current steps
// beyond MaxKeep (never the current one).
func (r *Registry) install(a *Adapter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rn := r.runs[a.Run]
	if rn == nil {
		rn = &run{}
		r.runs[a.Run] = rn
	}
	rn.steps = slices.DeleteFunc(rn.steps, func(b *Adapter) bool { return b.Step == a.Step })
	rn.steps = append(rn.steps, a)
	rn.current = a
	for len(rn.steps) > r.o.MaxKeep {
		rn.steps = slices.Delete(rn.steps, 0, 1) // the current one is last
	}
}

// warnOnce logs a warning about condition key unless the same message was
// the last one logged for it.
func (r *Registry) warnOnce(key, msg string, args ...any) {
	text := fmt.Sprint(append([]any{msg}, args...)...)
	if r.warned[key] == text {
		return
	}
	r.warned[key] = text
	r.o.Log.Warn(msg, args...)
}

// clearWarning forgets condition key, so that it is logged if it comes back.
func (r *Registry) clearWarning(key string) { delete(r.warned, key) }

// stampOf summarises a folder's files (following links) so that a rewrite
// is noticed.
func stampOf(dir string) stamp {
	var s stamp
	ents, _ := os.ReadDir(dir)
	for _, ent := range ents {
		if info, err := os.Stat(filepath.Join(dir, ent.Name())); err == nil {
			s.size += info.Size()
			if info.ModTime().After(s.mod) {
				s.mod = info.ModTime()
			}
		}
	}
	return s
}

package adapters

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/format/safetensors"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/train/model"
)

// ErrUnknown means a name resolves to no loaded adapter.
var ErrUnknown = errors.New("unknown adapter")

// Adapter is one loaded adapter step.
//
// Its weights live until nothing holds it: the registry holds it while the
// step is loaded (installed), and every Ref that Resolve handed out holds
// it until released. When the last hold goes, the weights are freed on the
// backend (model.Adapter.Free), exactly once.
type Adapter struct {
	Run     string
	Step    int
	Dir     string
	Weights *model.Adapter
	Loaded  time.Time

	stamp stamp // the folder's files when they were read
	// runDir is the run folder the step was read from (unknown where it could
	// not be read): a run folder found another since (deleted and made
	// anew, hone-serve's copy of a run published anew swapped in) holds
	// another run's steps under the same names (dropReplaced).
	runDir runfolder.FolderID
	// freed is Options.Freed, called once the weights are freed.
	freed func(*model.Adapter)
	// refs counts the holds: one for the registry while the step is
	// installed, one per unreleased Ref. It only rises while the registry
	// still holds the adapter (Resolve acquires under the registry's lock),
	// so once it reaches 0 it stays there.
	refs atomic.Int64
}

// unref gives up one hold; the last frees the weights on the backend.
func (a *Adapter) unref() {
	switch n := a.refs.Add(-1); {
	case n == 0:
		a.Weights.Free()
		if a.freed != nil {
			a.freed(a.Weights)
		}
	case n < 0:
		// Ref.Release gives up a hold once and the registry drops a step
		// once, so this is a bug in this package.
		panic(fmt.Sprintf("adapters: %s released more often than held", a.Name()))
	}
}

// Ref is one hold on a loaded adapter, from Resolve: its weights stay on
// the backend until Release, even if the registry drops the step meanwhile
// (beyond MaxKeep, a reload of the same step, Close). The adapter's fields
// are promoted (ref.Step, ref.Weights).
type Ref struct {
	*Adapter
	released atomic.Bool
}

// Release gives up the hold; the last hold on a dropped step frees its
// weights on the backend. Only the first call counts: a second one does
// nothing, so one Ref can never give up another's hold. Release on a nil
// Ref does nothing (the base model holds nothing). It is safe to call from
// any goroutine. The adapter's weights must not be used after it.
func (r *Ref) Release() {
	if r == nil || !r.released.CompareAndSwap(false, true) {
		return
	}
	r.Adapter.unref()
}

// Name is the served name, "<run>@<step>".
func (a *Adapter) Name() string { return runfolder.ServedName(a.Run, a.Step) }

// Options configure a Registry.
type Options struct {
	Dir     string
	Config  *model.Config // the base model's, to check shapes
	MaxKeep int           // steps kept loaded per run: the current one and the most recently current others (default 2)
	Log     *slog.Logger
	// ModelPath and ModelName are the served model's folder and its name
	// in the API: a step whose adapter_config.json base_model_name_or_path
	// names neither (nor their last path element) is served with a warning,
	// its shapes matching the model's being no proof that it was trained on
	// it. Both empty: no such warning.
	ModelPath, ModelName string
	// Backend is the model's backend: each adapter is placed on it as it
	// loads (model.Adapter.Place); nil leaves adapters in Go memory, which
	// only a host backend can read. A step the registry drops (beyond
	// MaxKeep, replaced by a reload of the same step, or at Close) is freed
	// on the backend (model.Adapter.Free) once nothing holds it: at once
	// when no Ref from Resolve is outstanding, else when the last one is
	// released (by hone-serve, once the engine retired the last sequence
	// that runs on it). On a backend that allocates its own memory (CUDA)
	// hot reload of every training step thus keeps MaxKeep steps per run
	// allocated, plus those requests in flight still use.
	Backend kernels.Backend
	// Freed, when set, is called once a dropped step's weights were freed
	// (the last hold went), with them: nothing will run on them again, so
	// what was kept for them can go too (hone-serve: the prefix cache's
	// rows computed with them). It runs on the goroutine that let go of
	// the last hold (a poll, Close, or a Ref's Release), so it must not
	// block.
	Freed func(*model.Adapter)
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
	// is logged once, and again only when it changes or comes back
	// (baseKey's: the other base model named).
	warned map[string]string
	// dirSeen: the adapters folder has been read at least once. Until then
	// a missing folder is a first run's (hone-serve started before the
	// first step is written), said once at info rather than warned.
	dirSeen bool
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

// Resolve returns a hold on the adapter a model name asks for: "<run>"
// (the step the run's latest file names) or "<run>@<step>" (any loaded
// step). The caller must Release it once nothing uses the adapter's weights
// any more; until then they stay on the backend even if the step is
// dropped. It fails with ErrUnknown for anything else.
func (r *Registry) Resolve(name string) (*Ref, error) {
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
		return acquire(rn.current), nil
	}
	for _, a := range rn.steps {
		if a.Step == want.Step {
			return acquire(a), nil
		}
	}
	return nil, fmt.Errorf("%w: %q (step %d is not loaded)", ErrUnknown, name, want.Step)
}

// absDir is dir made absolute; dir as it is when the working folder
// cannot be read (then no absolute path can be told).
func absDir(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// acquire takes a hold on a, which the registry holds (the caller holds
// r.mu, so it cannot be dropped meanwhile).
func acquire(a *Adapter) *Ref {
	a.refs.Add(1)
	return &Ref{Adapter: a}
}

// Names lists "<run>" and "<run>@<step>" for every loaded adapter, sorted.
func (r *Registry) Names() []string {
	var out []string
	for _, a := range r.Served() {
		out = append(out, a.Name)
	}
	return out
}

// Served is one name Names lists, with the step folder it means.
type Served struct {
	Name string
	Dir  string // the step's folder, absolute, as /v1/models reports a LoRA's path (root)
}

// Served lists what Names does, each with the folder of the step it
// means: "<run>" the current step's. The folders are absolute, as the
// vLLM front loads them into vLLM (which then lists them so): a path
// relative to the server's working folder (a relative --adapters) names
// nothing to a client elsewhere.
func (r *Registry) Served() []Served {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []Served
	for name, rn := range r.runs {
		if rn.current != nil {
			out = append(out, Served{Name: name, Dir: absDir(rn.current.Dir)})
		}
		for _, a := range rn.steps {
			out = append(out, Served{Name: a.Name(), Dir: absDir(a.Dir)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
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
	if err != nil && !r.dirSeen && errors.Is(err, fs.ErrNotExist) {
		if r.warned[""] == "" {
			r.warned[""] = "not yet"
			r.o.Log.Info("adapters: the adapters folder does not exist yet; serving the base model until a step is written there", "dir", r.o.Dir)
		}
		return 0
	}
	if err != nil {
		r.warnOnce("", "adapters: cannot read the adapters folder; serving what is loaded", "dir", r.o.Dir, "err", err)
		return 0
	}
	r.dirSeen = true
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
	// Before the step is located: a folder swapped in meanwhile is read
	// as the old one, whose steps go at the next poll, never the other
	// way round.
	runDir, _ := runfolder.StatFolder(filepath.Join(r.o.Dir, name))
	r.dropReplaced(name, runDir)
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
	w, base, err := readStep(step, r.o.Config)
	if err != nil {
		r.failed[step.Real] = st
		r.o.Log.Error("adapters: refusing adapter; the previous one keeps serving", "dir", step.Dir, "err", err)
		return false
	}
	delete(r.failed, step.Real)
	w.DropGrads() // served only: no backward pass, half the memory
	if r.o.Backend != nil {
		// The folder is fine: a backend without room now (its memory held
		// by steps that requests in flight still use) is retried at the
		// next poll, not refused until the folder changes.
		if err := w.Place(r.o.Backend); err != nil {
			r.warnOnce(placeKey(name), "adapters: cannot place the step on the backend; the previous one keeps serving, retrying at the next poll",
				"dir", step.Dir, "backend", r.o.Backend.Name(), "err", err)
			return false
		}
	}
	r.clearWarning(placeKey(name))
	a := &Adapter{Run: name, Step: step.N, Dir: step.Dir, Weights: w, Loaded: time.Now(), stamp: st, runDir: runDir, freed: r.o.Freed}
	a.refs.Store(1) // the registry's hold
	for _, d := range r.install(a) {
		d.unref()
	}
	r.dropReplaced(name, runDir) // the step current until now, if of the old folder
	r.o.Log.Info("adapters: loaded", "model", a.Name(), "dir", step.Dir)
	r.checkBase(name, step.Dir, base)
	return true
}

// readStep reads step's adapter for a model of shape c and the
// base_model_name_or_path its adapter_config.json names ("" when none).
// A NaN or infinite weight, which would turn every logit it touches into
// NaN, is refused by the read (peft.Read).
func readStep(step runfolder.Current, c *model.Config) (*model.Adapter, string, error) {
	w, base, err := model.ReadAdapterBase(step.Real, c)
	if errors.Is(err, safetensors.ErrNonFinite) {
		return nil, "", fmt.Errorf("%w; this adapter is not served", err)
	}
	return w, base, err
}

// checkBase warns when the step of run in dir names, as its base model,
// another model than the one served (Options.ModelPath, ModelName): a
// matching shape (the same family and size) loads it, yet its deltas were
// learnt against other weights. Said once while the run's steps keep
// naming the same base; a step naming the served model again clears it.
func (r *Registry) checkBase(run, dir, base string) {
	key := baseKey(run)
	// "--model ." names the served folder only together with the working
	// folder; its absolute path holds the model's name.
	served := r.o.ModelPath
	if abs, err := filepath.Abs(served); served != "" && err == nil {
		served = abs
	}
	if base == "" || r.o.ModelPath == "" && r.o.ModelName == "" || sameModel(base, served, r.o.ModelName) {
		r.clearWarning(key)
		return
	}
	if r.warned[key] == base {
		return
	}
	r.warned[key] = base
	r.o.Log.Warn("adapters: the adapter names another base model than the one served; its outputs may be meaningless",
		"dir", dir, "base_model_name_or_path", base, "served_model", r.o.ModelPath, "served_name", r.o.ModelName)
}

// baseKey is warned's key for run name's steps naming another base model
// (its value is that base).
func baseKey(name string) string { return name + " base" }

// sameModel reports whether base, an adapter's base_model_name_or_path,
// may name a model of the served names (its folder, its API name): one of
// the names each goes by (modelNames) is the same. Only a clear difference
// is warned about: a hub id "Org/Name" and a local folder ".../Name" are
// the same model.
func sameModel(base string, served ...string) bool {
	names := modelNames(base)
	if len(names) == 0 {
		// "." or "./": hone-train writes --model as given, relative to a
		// working folder the adapter does not record; nothing to tell.
		return true
	}
	for _, s := range served {
		for _, n := range modelNames(s) {
			if slices.Contains(names, n) {
				return true
			}
		}
	}
	return false
}

// modelNames are the names path p goes by, lower-cased (a folder copied
// from the hub may differ in case): its last element and, for a folder
// inside a Hugging Face cache (.../models--Org--Name/snapshots/<revision>),
// the repository's name.
func modelNames(p string) []string {
	parts := strings.FieldsFunc(strings.ToLower(p), func(c rune) bool { return c == '/' || c == '\\' })
	// "." and ".." name no model by themselves.
	parts = slices.DeleteFunc(parts, func(e string) bool { return e == "." || e == ".." })
	if len(parts) == 0 {
		return nil
	}
	names := []string{parts[len(parts)-1]}
	for _, e := range parts {
		if repo, ok := strings.CutPrefix(e, "models--"); ok {
			_, name, found := strings.Cut(repo, "--")
			if !found {
				name = repo
			}
			names = append(names, name)
		}
	}
	return names
}

// Close forgets every loaded adapter (Resolve fails afterwards; Poll loads
// nothing) and gives up the registry's holds: the memory on
// Options.Backend of each adapter no Ref holds is freed now, that of the
// others when their last Ref is released.
func (r *Registry) Close() {
	r.pollMu.Lock()
	defer r.pollMu.Unlock()
	r.mu.Lock()
	var dropped []*Adapter
	for _, rn := range r.runs {
		dropped = append(dropped, rn.steps...)
	}
	r.runs, r.closed = map[string]*run{}, true
	r.mu.Unlock()
	for _, a := range dropped {
		a.unref()
	}
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
// beyond MaxKeep (never the current one). It returns the dropped adapters,
// whose registry holds the caller gives up (outside the lock: the last one
// frees memory on the backend).
func (r *Registry) install(a *Adapter) []*Adapter {
	r.mu.Lock()
	defer r.mu.Unlock()
	rn := r.runs[a.Run]
	if rn == nil {
		rn = &run{}
		r.runs[a.Run] = rn
	}
	var dropped []*Adapter
	rn.steps = slices.DeleteFunc(rn.steps, func(b *Adapter) bool {
		if b.Step == a.Step {
			dropped = append(dropped, b)
			return true
		}
		return false
	})
	rn.steps = append(rn.steps, a)
	rn.current = a
	for len(rn.steps) > r.o.MaxKeep {
		dropped = append(dropped, rn.steps[0]) // the current one is last
		rn.steps = slices.Delete(rn.steps, 0, 1)
	}
	return dropped
}

// dropReplaced drops the loaded steps of run name, but its current one,
// read from a run folder since deleted and made anew (a run retrained
// under its name; hone-serve's copy of a run published anew, swapped in):
// another folder than runDir, its folder now, whose step folder is gone
// or holds other files (TestReplacedRunStepsNotServed). Named
// "<run>@<step>", the old run's steps answered for the new run's, or for
// steps it has not reached. The current one stays what "<run>" means
// until the new folder's step loads (pollRun calls this again then): as
// when a step fails to load, the previous one keeps serving. A step whose
// folder is as it was read is kept: a file system whose folder identities
// change (a network mount) drops nothing it should not.
func (r *Registry) dropReplaced(name string, runDir runfolder.FolderID) {
	// Poll holds pollMu, so that only reads of the registry run meanwhile:
	// the folders are read outside mu.
	r.mu.RLock()
	var old []*Adapter
	if rn := r.runs[name]; rn != nil {
		for _, a := range rn.steps {
			if a != rn.current && a.runDir.Known() && runDir.Known() && !a.runDir.Same(runDir) {
				old = append(old, a)
			}
		}
	}
	r.mu.RUnlock()
	old = slices.DeleteFunc(old, func(a *Adapter) bool { return stampOf(a.Dir) == a.stamp })
	if len(old) == 0 {
		return
	}
	r.mu.Lock()
	rn := r.runs[name]
	rn.steps = slices.DeleteFunc(rn.steps, func(a *Adapter) bool { return slices.Contains(old, a) })
	r.mu.Unlock()
	for _, a := range old {
		r.o.Log.Info("adapters: dropped a step read from a run folder since deleted and made anew", "model", a.Name(), "dir", a.Dir)
		a.unref()
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

// placeKey is warnOnce's key for run name's step failing to be placed on
// the backend (a run name never holds a space).
func placeKey(name string) string { return name + " place" }

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

package adapters

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

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
}

// Name is the served name, "<run>@<step>".
func (a *Adapter) Name() string { return a.Run + "@" + strconv.Itoa(a.Step) }

var (
	runName  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
	stepName = regexp.MustCompile(`^step-([0-9]{1,12})$`)
)

// ValidRun reports whether s may name a run (no path separators, no "..").
func ValidRun(s string) bool { return runName.MatchString(s) && !strings.Contains(s, "..") }

// ParseStepDir returns N of a "step-N" folder name.
func ParseStepDir(name string) (int, bool) {
	m := stepName.FindStringSubmatch(name)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}

// Options configure a Registry.
type Options struct {
	Dir     string
	Config  *model.Config // the base model's, to check shapes
	MaxKeep int           // steps kept per run (default 2)
	Log     *slog.Logger
}

type run struct {
	steps []*Adapter // ascending by step, at most MaxKeep
}

type failure struct {
	mod  time.Time
	size int64
}

// Registry holds the loaded adapters. It is safe for concurrent use.
type Registry struct {
	o Options

	mu     sync.RWMutex
	runs   map[string]*run
	failed map[string]failure // step dirs that failed, by path, until they change
}

// New returns an empty registry; call Poll or Watch to load adapters.
func New(o Options) *Registry {
	if o.MaxKeep <= 0 {
		o.MaxKeep = 2
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Registry{o: o, runs: map[string]*run{}, failed: map[string]failure{}}
}

// Resolve returns the adapter a model name asks for: "<run>" (newest step)
// or "<run>@<step>". It fails with ErrUnknown for anything else.
func (r *Registry) Resolve(name string) (*Adapter, error) {
	runS, stepS, hasStep := strings.Cut(name, "@")
	if !ValidRun(runS) {
		return nil, fmt.Errorf("%w: %q", ErrUnknown, name)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	rn := r.runs[runS]
	if rn == nil || len(rn.steps) == 0 {
		return nil, fmt.Errorf("%w: %q", ErrUnknown, name)
	}
	if !hasStep {
		return rn.steps[len(rn.steps)-1], nil
	}
	n, err := strconv.Atoi(stepS)
	if err != nil || n < 0 || strconv.Itoa(n) != stepS {
		return nil, fmt.Errorf("%w: %q (step must be a plain number)", ErrUnknown, name)
	}
	for _, a := range rn.steps {
		if a.Step == n {
			return a, nil
		}
	}
	return nil, fmt.Errorf("%w: %q (step %d is not loaded)", ErrUnknown, name, n)
}

// Names lists "<run>" and "<run>@<step>" for every loaded adapter, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	for name, rn := range r.runs {
		if len(rn.steps) > 0 {
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

// Poll loads the newest step of every run whose newest step is not loaded
// yet. Failures are logged; it returns how many adapters it loaded.
func (r *Registry) Poll(ctx context.Context) int {
	ents, err := os.ReadDir(r.o.Dir)
	if err != nil {
		r.o.Log.Warn("adapters: read folder", "dir", r.o.Dir, "err", err)
		return 0
	}
	loaded := 0
	for _, ent := range ents {
		if ctx.Err() != nil {
			return loaded
		}
		if !ent.IsDir() || !ValidRun(ent.Name()) {
			continue
		}
		if r.pollRun(ent.Name()) {
			loaded++
		}
	}
	return loaded
}

// newestStep returns the step folder the run points at.
func (r *Registry) newestStep(runDir string) (string, int, error) {
	if b, err := os.ReadFile(filepath.Join(runDir, "latest")); err == nil {
		name := filepath.Base(strings.TrimSpace(string(b)))
		n, ok := ParseStepDir(name)
		if !ok || strings.TrimSpace(string(b)) != name {
			return "", 0, fmt.Errorf("%s/latest names %q, not a step-N folder of the run", runDir, strings.TrimSpace(string(b)))
		}
		return name, n, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", 0, err
	}
	ents, err := os.ReadDir(runDir)
	if err != nil {
		return "", 0, err
	}
	best, bestN := "", -1
	for _, ent := range ents {
		if n, ok := ParseStepDir(ent.Name()); ok && ent.IsDir() && n > bestN {
			best, bestN = ent.Name(), n
		}
	}
	if best == "" {
		return "", 0, os.ErrNotExist
	}
	return best, bestN, nil
}

func (r *Registry) pollRun(name string) bool {
	runDir := filepath.Join(r.o.Dir, name)
	stepDir, n, err := r.newestStep(runDir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			r.o.Log.Warn("adapters: find newest step", "run", name, "err", err)
		}
		return false
	}
	r.mu.RLock()
	rn := r.runs[name]
	have := rn != nil && slices.ContainsFunc(rn.steps, func(a *Adapter) bool { return a.Step == n })
	r.mu.RUnlock()
	if have {
		return false
	}
	dir := filepath.Join(runDir, stepDir)
	st := stamp(dir)
	if f, ok := r.failedAt(dir); ok && f == st {
		return false // refused before and unchanged since
	}
	w, err := model.ReadAdapter(dir, r.o.Config)
	if err != nil {
		r.mu.Lock()
		r.failed[dir] = st
		r.mu.Unlock()
		r.o.Log.Error("adapters: refusing adapter; the previous one keeps serving", "dir", dir, "err", err)
		return false
	}
	a := &Adapter{Run: name, Step: n, Dir: dir, Weights: w, Loaded: time.Now()}
	r.mu.Lock()
	delete(r.failed, dir)
	rn = r.runs[name]
	if rn == nil {
		rn = &run{}
		r.runs[name] = rn
	}
	rn.steps = append(rn.steps, a)
	sort.Slice(rn.steps, func(i, j int) bool { return rn.steps[i].Step < rn.steps[j].Step })
	if len(rn.steps) > r.o.MaxKeep {
		rn.steps = slices.Clone(rn.steps[len(rn.steps)-r.o.MaxKeep:])
	}
	r.mu.Unlock()
	r.o.Log.Info("adapters: loaded", "model", a.Name(), "dir", dir)
	return true
}

func (r *Registry) failedAt(dir string) (failure, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	f, ok := r.failed[dir]
	return f, ok
}

// stamp summarises a folder's files so that a rewrite is noticed.
func stamp(dir string) failure {
	var f failure
	ents, _ := os.ReadDir(dir)
	for _, ent := range ents {
		if info, err := ent.Info(); err == nil {
			f.size += info.Size()
			if info.ModTime().After(f.mod) {
				f.mod = info.ModTime()
			}
		}
	}
	return f
}

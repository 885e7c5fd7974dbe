package checkpoint

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hone-rl/hone/format/peft"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/format/safetensors"
)

// File names inside a run folder and a step folder that only training uses;
// the names every stage shares (step folders, latest, metrics.jsonl) are
// format/runfolder's.
const (
	BestName      = runfolder.BestName
	ManifestName  = "manifest.json"
	LockName      = "lock"
	OptimizerName = "optimizer.safetensors"
	StateName     = "trainer_state.json"
	ConfigName    = "train_config.json"
)

// Run is one run folder.
type Run struct {
	Dir string
}

// StepDir is the folder of step n, as hone-train names it.
func (r *Run) StepDir(n int) string { return filepath.Join(r.Dir, runfolder.StepName(n)) }

// Tensor is a named float32 array saved beside the adapter (optimizer state).
type Tensor struct {
	Name   string
	Values []float32
}

// State is what trainer_state.json holds.
type State struct {
	Step          int                `json:"step"`           // training steps done
	OptimizerStep int                `json:"optimizer_step"` // AdamW updates done (steps with something to train)
	Metrics       map[string]float64 `json:"metrics,omitempty"`
	// Extra is the caller's own resumable state (e.g. an incremental session).
	Extra json.RawMessage `json:"extra,omitempty"`
}

// Save writes step st.Step: the adapter, the optimizer tensors, st and the
// config (any JSON-marshalable value) into a new step folder atomically, then
// points latest at it.
func (r *Run) Save(ad *peft.Adapter, opt []Tensor, st State, config any) error {
	dir := r.StepDir(st.Step)
	if _, err := os.Stat(dir); err == nil {
		// A step folder that latest does not name yet is what a crash between
		// the folder's rename and the pointer's leaves; it is redone.
		if last, ok, err := r.Latest(); err != nil {
			return err
		} else if ok && last >= st.Step {
			return fmt.Errorf("checkpoint: %s already exists and latest is step %d", dir, last)
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("checkpoint: remove stale %s: %w", dir, err)
		}
	}
	cfg, err := json.MarshalIndent(config, "", "  ")
	if err != nil {
		return fmt.Errorf("checkpoint: config: %w", err)
	}
	state, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("checkpoint: state: %w", err)
	}
	err = peft.WriteWith(dir, ad, func(tmp string) error {
		var ts []safetensors.Tensor
		for _, t := range opt {
			x, err := safetensors.FromFloat32Tensor(t.Name, "F32", []int{len(t.Values)}, t.Values)
			if err != nil {
				return err
			}
			ts = append(ts, x)
		}
		if err := safetensors.Write(filepath.Join(tmp, OptimizerName), ts, nil); err != nil {
			return err
		}
		if err := writeFileSync(filepath.Join(tmp, StateName), append(state, '\n')); err != nil {
			return err
		}
		return writeFileSync(filepath.Join(tmp, ConfigName), append(cfg, '\n'))
	})
	if err != nil {
		return fmt.Errorf("checkpoint: step %d: %w", st.Step, err)
	}
	return runfolder.WritePointer(r.Dir, runfolder.LatestName, st.Step)
}

// Latest returns the step latest names; ok is false in a fresh run folder.
func (r *Run) Latest() (step int, ok bool, err error) { return r.pointer(runfolder.LatestName) }

// Best returns the step best names, if any.
func (r *Run) Best() (step int, ok bool, err error) { return r.pointer(BestName) }

// DropBestAfter removes the best pointer when it names a step after last:
// a run resumed from last trains those steps again, so the pointer would
// name a new adapter for the old one's result (the next Prune with a
// metric names the best again). It returns the step the pointer named
// and whether it was removed; a pointer that names no step is left for
// Best to report.
func (r *Run) DropBestAfter(last int) (int, bool, error) {
	s, ok, err := runfolder.ReadPointer(r.Dir, BestName)
	if err != nil || !ok || s.N <= last {
		return 0, false, nil
	}
	if err := os.Remove(filepath.Join(r.Dir, BestName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, false, fmt.Errorf("checkpoint: %w", err)
	}
	return s.N, true, nil
}

// DropBest removes the best pointer, returning the step it named and
// whether there was one: a resume that changes --best-metric or
// --best-mode names the best again by the new ones (Prune), and a run
// without a --best-metric names none, so the old pointer, left, would
// name a step for a metric the run no longer keeps it by (and, no
// longer protected, one --keep-last may prune).
func (r *Run) DropBest() (int, bool, error) {
	s, ok, err := runfolder.ReadPointer(r.Dir, BestName)
	if err != nil {
		return 0, false, fmt.Errorf("checkpoint: %w", err)
	}
	if !ok {
		return 0, false, nil
	}
	if err := os.Remove(filepath.Join(r.Dir, BestName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, false, fmt.Errorf("checkpoint: %w", err)
	}
	return s.N, true, nil
}

// pointer reads the pointer file name and checks that the step folder it
// names exists. A run resumes from the folder hone-train names its steps
// with, StepDir(n), whatever spelling of n the file holds.
func (r *Run) pointer(name string) (int, bool, error) {
	s, ok, err := runfolder.ReadPointer(r.Dir, name)
	if err != nil {
		return 0, false, fmt.Errorf("checkpoint: %w", err)
	}
	if !ok {
		return 0, false, nil
	}
	if _, err := os.Stat(r.StepDir(s.N)); err != nil {
		return 0, false, fmt.Errorf("checkpoint: %s names %s: %w", name, runfolder.StepName(s.N), err)
	}
	return s.N, true, nil
}

// ReadState reads step n's trainer_state.json. A file of more than
// 64 MiB (a weights file under its name, a corrupt write) is refused by
// its size before it is read into memory, as peft's config reader does.
func (r *Run) ReadState(n int) (State, error) {
	var st State
	b, err := peft.ReadConfigFile(filepath.Join(r.StepDir(n), StateName))
	if err != nil {
		return st, fmt.Errorf("checkpoint: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		// The file's own field names, not Go's ("State.step of type int"):
		// the user mends the file, not the program.
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			top, _, _ := strings.Cut(te.Field, ".")
			want := map[string]string{"step": "a whole number", "optimizer_step": "a whole number", "metrics": "an object of numbers"}[top]
			if want == "" {
				want = "a " + te.Type.Kind().String()
			}
			err = fmt.Errorf("field %q: a JSON %s, want %s", te.Field, te.Value, want)
		} else if errors.As(err, &te) {
			err = fmt.Errorf("a JSON %s, want an object", te.Value)
		}
		return st, fmt.Errorf("checkpoint: %s: %w", filepath.Join(r.StepDir(n), StateName), err)
	}
	return st, nil
}

// ReadConfig returns step n's train_config.json bytes, refusing a file of
// more than 64 MiB by its size, as ReadState does.
func (r *Run) ReadConfig(n int) ([]byte, error) {
	b, err := peft.ReadConfigFile(filepath.Join(r.StepDir(n), ConfigName))
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return b, nil
}

// WriteConfig replaces step n's train_config.json with cfg, atomically
// (a temporary file renamed over it), so that a reader (hone-inspect
// log-eval, report, a resume) sees the old config or the new one whole.
// A resume that changes the checkpoint options records them this way.
func (r *Run) WriteConfig(n int, cfg []byte) error {
	if _, err := os.Stat(r.StepDir(n)); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := runfolder.WriteFile(filepath.Join(r.StepDir(n), ConfigName), cfg); err != nil {
		return fmt.Errorf("checkpoint: step %d: %w", n, err)
	}
	return nil
}

// ReadOptimizer fills each tensor of opt (by name) from step n.
func (r *Run) ReadOptimizer(n int, opt []Tensor) error {
	path := filepath.Join(r.StepDir(n), OptimizerName)
	f, err := safetensors.OpenFile(path)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	defer f.Close()
	if len(f.Names()) != len(opt) {
		return fmt.Errorf("checkpoint: %s holds %d tensors, the optimizer has %d", path, len(f.Names()), len(opt))
	}
	for _, t := range opt {
		if err := f.Float32Into(t.Values, t.Name); err != nil {
			return fmt.Errorf("checkpoint: %s: %w", path, err)
		}
		// A NaN or infinite moment makes every update of its weights NaN
		// from the first step resumed.
		if err := safetensors.CheckFinite(t.Name, t.Values, 0); err != nil {
			return fmt.Errorf("checkpoint: %s: %w", path, err)
		}
	}
	return nil
}

// Prune deletes step folders except the keep most recent, the one latest
// names and the best by metric (higher is better when maximize), whose step
// it records in the best pointer. keep ≤ 0 keeps everything; metric "" skips
// the best pointer.
//
// A training metric ("reward_mean") is read from each step's
// trainer_state.json; an eval metric ("val/reward", IsEvalMetric) from
// eval.jsonl, which hone-inspect log-eval fills after the step was saved.
// With an eval metric, the steps newer than the newest step evaluated on it
// are kept too, until they are evaluated: a step is never pruned before its
// result is known.
func (r *Run) Prune(keep int, metric string, maximize bool) error {
	steps, err := r.Steps()
	if err != nil {
		return err
	}
	protect := map[int]bool{}
	if last, ok, err := r.Latest(); err != nil {
		return err
	} else if ok {
		protect[last] = true
	}
	if metric != "" {
		value := func(s int) (float64, bool, error) {
			st, err := r.ReadState(s)
			if err != nil {
				return 0, false, err
			}
			v, ok := st.Metrics[metric]
			return v, ok && v == v, nil
		}
		if IsEvalMetric(metric) {
			evals, err := r.ReadEval()
			if err != nil {
				return err
			}
			newest := -1
			for s, row := range evals {
				if _, ok := row[metric]; ok {
					newest = max(newest, s)
				}
			}
			for _, s := range steps {
				if s > newest {
					protect[s] = true
				}
			}
			value = func(s int) (float64, bool, error) {
				v, ok := evals[s][metric]
				return v, ok, nil
			}
		}
		bestStep, bestV, found := 0, 0.0, false
		for _, s := range steps {
			v, ok, err := value(s)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			if !found || (maximize && v > bestV) || (!maximize && v < bestV) {
				bestStep, bestV, found = s, v, true
			}
		}
		if found {
			protect[bestStep] = true
			if err := runfolder.WritePointer(r.Dir, BestName, bestStep); err != nil {
				return err
			}
		}
	}
	if keep <= 0 {
		return nil
	}
	for i, s := range steps {
		if i >= len(steps)-keep || protect[s] {
			continue
		}
		if err := r.removeStep(s); err != nil {
			return fmt.Errorf("checkpoint: prune: %w", err)
		}
	}
	return nil
}

// DropStepsAfter removes the step folders after last: stale ones, of steps
// a crash or a latest moved back by hand undid, as RepairMetrics drops
// their rows. Left, a resumed run that ends before reaching them kept them
// beside its own steps: hone-serve served their old weights as run@N, and
// Prune counted them among the most recent. Call it only while holding the
// lock.
func (r *Run) DropStepsAfter(last int) error {
	steps, err := r.Steps()
	if err != nil {
		return err
	}
	for _, s := range steps {
		if s <= last {
			continue
		}
		if err := r.removeStep(s); err != nil {
			return fmt.Errorf("checkpoint: drop stale step: %w", err)
		}
	}
	return nil
}

// removeStep removes step s's folder, renaming it to a temporary name first
// (".step-000042.tmp-removed"), so that a reader (hone-serve loading
// run@42) sees the whole step or none, and a kill leaves what CleanTemp
// removes rather than part of a step.
func (r *Run) removeStep(s int) error {
	tmp := filepath.Join(r.Dir, "."+runfolder.StepName(s)+".tmp-removed")
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.Rename(r.StepDir(s), tmp); err != nil {
		return err
	}
	return os.RemoveAll(tmp)
}

// CleanTemp removes the temporary folders and files a killed save left in
// the run folder (".step-000042.tmp-…", ".latest.tmp-…"). Call it only while
// holding the lock.
func (r *Run) CleanTemp() error {
	ents, err := os.ReadDir(r.Dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("checkpoint: %w", err)
	}
	for _, e := range ents {
		if n := e.Name(); runfolder.IsTemp(n) {
			if err := os.RemoveAll(filepath.Join(r.Dir, n)); err != nil {
				return fmt.Errorf("checkpoint: %w", err)
			}
		}
	}
	return nil
}

// Steps lists the numbers of the step folders present, ascending.
func (r *Run) Steps() ([]int, error) {
	steps, err := runfolder.Steps(r.Dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	var out []int
	for _, s := range steps {
		out = append(out, s.N)
	}
	return out, nil
}

// AppendMetrics appends one JSON line to metrics.jsonl and syncs it.
func (r *Run) AppendMetrics(row map[string]float64) error {
	b, err := json.Marshal(row)
	if err != nil {
		return fmt.Errorf("checkpoint: metrics row: %w", err)
	}
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(r.Dir, runfolder.MetricsName), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("checkpoint: %w", err)
	}
	return f.Close()
}

// ReadMetrics returns metrics.jsonl's rows by step (an empty map when the
// run has none); of two rows of one step, the later.
func (r *Run) ReadMetrics() (map[int]map[string]float64, error) {
	rows := map[int]map[string]float64{}
	err := readJSONRows(filepath.Join(r.Dir, runfolder.MetricsName), func(_ int, row map[string]float64) error {
		rows[int(row["step"])] = row
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// RepairMetrics makes metrics.jsonl agree with the last saved step after a
// crash: rows of steps after last are dropped (their step is redone), a
// torn last line (a kill mid-append: no newline ends it) is dropped, and
// lastRow is appended when the row of step last is missing (the process died
// between the checkpoint and the metrics line). Any other line that is not
// a row is an error naming it, and the file is left as it is (but for a
// fresh run, last 0, which keeps no line).
func (r *Run) RepairMetrics(last int, lastRow map[string]float64) error {
	path := filepath.Join(r.Dir, runfolder.MetricsName)
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("checkpoint: %w", err)
	}
	var out bytes.Buffer
	have := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	// The line a kill mid-append tore is the last, with no newline.
	torn := -1
	if len(b) > 0 && b[len(b)-1] != '\n' {
		torn = bytes.Count(b, []byte{'\n'}) + 1
	}
	for line := 1; sc.Scan(); line++ {
		var row map[string]float64
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			if line == torn || last == 0 { // a fresh run keeps no row
				continue
			}
			return fmt.Errorf("checkpoint: %s:%d: %w (each line is a JSON object of numbers; the file was left as it is)", path, line, err)
		}
		s := int(row["step"])
		if s > last {
			continue
		}
		have = have || s == last
		out.Write(sc.Bytes())
		out.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("checkpoint: %s: %w (the file was left as it is)", path, err)
	}
	if !have && lastRow != nil {
		line, err := json.Marshal(lastRow)
		if err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		out.Write(line)
		out.WriteByte('\n')
	}
	if bytes.Equal(out.Bytes(), b) {
		return nil
	}
	return runfolder.WriteFile(path, out.Bytes())
}

// Lock takes an exclusive, non-blocking flock on the run's lock file. It
// fails at once when another process holds it. The lock ends with unlock or
// with the process.
func (r *Run) Lock() (unlock func(), err error) {
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	path := filepath.Join(r.Dir, LockName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if held, err := tryLockFile(f); err != nil || held {
		f.Close()
		if held {
			return nil, fmt.Errorf("checkpoint: %s is held by another process (a hone-train run, or hone-inspect log-eval recording an eval): %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("checkpoint: lock %s: %w", path, err)
	}
	return func() {
		_ = unlockFile(f)
		_ = f.Close()
	}, nil
}

// CheckUnlocked fails at once, as Lock does, when another process holds
// the run's lock, and otherwise holds nothing and creates nothing (no run
// folder, no lock file): a command calls it before loading the base model,
// which takes minutes and the model's memory again (on a GPU the training
// run may need) only to find the lock held — what an overlapping cron call
// did every time while a long session trained. Lock is still what guards
// the run; another process may take it between the two.
func (r *Run) CheckUnlocked() error {
	path := filepath.Join(r.Dir, LockName)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil // no lock file, so nobody holds it; Lock reports the rest
	}
	defer f.Close()
	held, err := tryLockFile(f)
	if held {
		return fmt.Errorf("checkpoint: %s is held by another process (a hone-train run, or hone-inspect log-eval recording an eval): %w", path, ErrLocked)
	}
	if err != nil {
		return nil
	}
	return unlockFile(f)
}

// ErrLocked is returned (wrapped) by Lock when another run holds the lock.
var ErrLocked = errors.New("run is locked")

func writeFileSync(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

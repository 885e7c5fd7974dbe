package checkpoint

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hone-rl/hone/format/runfolder"
)

// splitName is the rule for an eval split's name, the prefix of its
// metrics.
var splitName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// CheckSplit says why s may not name an eval split, or returns nil.
func CheckSplit(s string) error {
	if !splitName.MatchString(s) {
		return fmt.Errorf("split %q: want a lower-case letter, then up to 31 lower-case letters, digits, \"_\" or \"-\" (e.g. val)", s)
	}
	return nil
}

// EvalMetrics names the metrics hone-inspect log-eval computes for every
// split (stored as SPLIT/NAME); an environment's own metrics come beside
// them and may not take these names.
func EvalMetrics() []string {
	return []string{"reward", "reward_std_dev", "exception_rate", "episodes"}
}

// IsEvalMetric reports whether a metric name is an eval metric
// ("val/reward"), which eval.jsonl holds, rather than a training metric
// ("reward_mean"), which each step's trainer_state.json holds.
func IsEvalMetric(name string) bool {
	split, _, ok := strings.Cut(name, "/")
	return ok && CheckSplit(split) == nil
}

// ReadEval returns eval.jsonl's rows by step (an empty map when the run
// has none).
func (r *Run) ReadEval() (map[int]map[string]float64, error) {
	path := filepath.Join(r.Dir, runfolder.EvalName)
	rows := map[int]map[string]float64{}
	err := readJSONRows(path, func(line int, row map[string]float64) error {
		s, ok := row["step"]
		if !ok || s < 0 || s != math.Trunc(s) {
			return fmt.Errorf("checkpoint: %s:%d: \"step\" is missing or not a non-negative integer", path, line)
		}
		if _, dup := rows[int(s)]; dup {
			return fmt.Errorf("checkpoint: %s:%d: a second row for step %d", path, line, int(s))
		}
		delete(row, "step")
		rows[int(s)] = row
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// readJSONRows calls each for every line of the JSON Lines file at path, a
// JSON object of numbers each, numbered from 1; a missing file has none.
func readJSONRows(path string, each func(line int, row map[string]float64) error) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for line := 1; sc.Scan(); line++ {
		var row map[string]float64
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			return fmt.Errorf("checkpoint: %s:%d: %w (each line is a JSON object of numbers)", path, line, err)
		}
		if err := each(line, row); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("checkpoint: %s: %w", path, err)
	}
	return nil
}

// LogEval records the metrics of split at step in eval.jsonl: they replace
// whatever that split had at that step (other splits' metrics stay), and
// the file is rewritten atomically. Metric names are given without the
// split ("reward"); they are stored as "split/reward". The caller holds the
// run's lock (LockWait), since Prune reads the file.
func (r *Run) LogEval(step int, split string, metrics map[string]float64) error {
	if err := CheckSplit(split); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if step < 0 {
		return fmt.Errorf("checkpoint: eval step %d is negative", step)
	}
	rows, err := r.ReadEval()
	if err != nil {
		return err
	}
	row := rows[step]
	if row == nil {
		row = map[string]float64{}
	}
	maps.DeleteFunc(row, func(k string, _ float64) bool { return strings.HasPrefix(k, split+"/") })
	for k, v := range metrics {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("checkpoint: eval metric %s/%s is %v, which JSON cannot hold", split, k, v)
		}
		row[split+"/"+k] = v
	}
	rows[step] = row
	var out bytes.Buffer
	for _, s := range slices.Sorted(maps.Keys(rows)) {
		line := map[string]float64{"step": float64(s)}
		maps.Copy(line, rows[s])
		b, err := json.Marshal(line)
		if err != nil {
			return fmt.Errorf("checkpoint: eval row: %w", err)
		}
		out.Write(b)
		out.WriteByte('\n')
	}
	return runfolder.WriteFile(filepath.Join(r.Dir, runfolder.EvalName), out.Bytes())
}

// RepairEval drops eval.jsonl's rows of steps after last, the step a run
// resumes from (0 for a fresh run), and returns those steps. Such rows
// evaluated adapters the run no longer has: its latest was moved back (by
// hand, to redo steps) or its steps were removed. Kept, they would stand
// for the redone steps, which hold other weights: --best-metric would
// take them for results, prune a redone step as evaluated, and name it
// best by another adapter's score; hone-inspect report would draw them.
// The file is rewritten atomically, and only when a row goes; lines it
// cannot read are kept for ReadEval to report.
func (r *Run) RepairEval(last int) ([]int, error) {
	path := filepath.Join(r.Dir, runfolder.EvalName)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	var out bytes.Buffer
	var dropped []int
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var row map[string]float64
		if err := json.Unmarshal(sc.Bytes(), &row); err == nil {
			if s, ok := row["step"]; ok && s > float64(last) {
				dropped = append(dropped, int(s))
				continue
			}
		}
		out.Write(sc.Bytes())
		out.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("checkpoint: %s: %w", path, err)
	}
	if len(dropped) == 0 {
		return nil, nil
	}
	if err := runfolder.WriteFile(path, out.Bytes()); err != nil {
		return nil, err
	}
	return dropped, nil
}

// LockWait takes the run's lock like Lock, but waits while another process
// holds it (a hone-train still training), polling every poll until ctx
// ends. waiting, when not nil, is called once if it has to wait.
func (r *Run) LockWait(ctx context.Context, poll time.Duration, waiting func()) (unlock func(), err error) {
	told := false
	for {
		unlock, err := r.Lock()
		if !errors.Is(err, ErrLocked) {
			return unlock, err
		}
		if !told && waiting != nil {
			waiting()
			told = true
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("checkpoint: waiting for the lock of %s: %w", r.Dir, ctx.Err())
		case <-time.After(poll):
		}
	}
}

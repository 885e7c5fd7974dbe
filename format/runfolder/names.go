package runfolder

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// File names inside a run folder.
const (
	// LatestName is the file naming the current step folder.
	LatestName = "latest"
	// BestName is the file naming the best step folder by hone-train's
	// --best-metric, when the run has one.
	BestName = "best"
	// MetricsName is the file of one JSON object per trained step.
	MetricsName = "metrics.jsonl"
	// EvalName is the file of evaluation results: one JSON object per
	// evaluated step, ascending by step, {"step": N, "val/reward": …,
	// "val/<metric>": …, "test/…": …}; every key but "step" is
	// "SPLIT/NAME". hone-inspect log-eval writes it (under the run's lock);
	// hone-train's --best-metric and hone-inspect report read it.
	EvalName = "eval.jsonl"
)

// stepPrefix starts every step folder name.
const stepPrefix = "step-"

// maxStepDigits bounds a step folder's number, so that every name parses
// into an int.
const maxStepDigits = 12

// runName is the run-name rule; ".." is refused besides, so that no run
// name is a path.
var runName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// CheckRun says why s may not name a run, or returns nil. A run name is a
// folder name and part of a served model name, so it holds no path
// separator, no "..", no "@" and no space.
func CheckRun(s string) error {
	if !runName.MatchString(s) || strings.Contains(s, "..") {
		return fmt.Errorf("%q is not a run name: use a letter or digit, then up to 127 letters, digits, \".\", \"_\" or \"-\" (no \"..\")", s)
	}
	return nil
}

// ValidRun reports whether s may name a run.
func ValidRun(s string) bool { return CheckRun(s) == nil }

// StepName is the folder name of step n: "step-000042".
func StepName(n int) string { return fmt.Sprintf("%s%06d", stepPrefix, n) }

// ParseStepName returns n of a step folder name: "step-" and 1 to 12 decimal
// digits, zero-padded or not ("step-000042", "step-42"). Anything else (a
// sign, a path, a space) is not a step folder.
func ParseStepName(s string) (int, bool) {
	digits, ok := strings.CutPrefix(s, stepPrefix)
	if !ok || len(digits) == 0 || len(digits) > maxStepDigits {
		return 0, false
	}
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(digits)
	return n, err == nil
}

// Served is a model name that names a run: "<run>", the run's current step,
// or "<run>@<N>", its step N.
type Served struct {
	Run     string
	Step    int  // N; 0 without HasStep
	HasStep bool // the name is "<run>@<N>"
}

// stepSep separates the run from the step in a served name.
const stepSep = "@"

// String is the served name: "<run>" or "<run>@<N>".
func (s Served) String() string {
	if !s.HasStep {
		return s.Run
	}
	return s.Run + stepSep + strconv.Itoa(s.Step)
}

// ServedName is the served name of a run's step: "<run>@<N>".
func ServedName(run string, step int) string {
	return Served{Run: run, Step: step, HasStep: true}.String()
}

// ParseServed reads a served model name. The step must be a plain decimal
// number (42; not 042, +42, -1 or 4.2), so that each step has one name. It
// fails for any other name; the Served it returns then still holds the part before the first "@" as Run, so that a
// caller can tell a bad step of a run it knows from a name that is not one
// of its runs.
func ParseServed(name string) (Served, error) {
	run, step, hasStep := strings.Cut(name, stepSep)
	s := Served{Run: run, HasStep: hasStep}
	if err := CheckRun(run); err != nil {
		return s, fmt.Errorf("model %q: %w", name, err)
	}
	if !hasStep {
		return s, nil
	}
	n, err := strconv.Atoi(step)
	if err != nil || n < 0 || strconv.Itoa(n) != step {
		return s, fmt.Errorf("model %q: the step after %q must be a plain number such as 42", name, stepSep)
	}
	s.Step = n
	return s, nil
}

// ServedStep returns the adapter step a served model name carries: N of
// "<run>@<N>". ok is false for any other name (a base model's, or "<run>"
// alone).
func ServedStep(name string) (step int, ok bool) {
	s, err := ParseServed(name)
	if err != nil || !s.HasStep {
		return 0, false
	}
	return s.Step, true
}

package trainer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hone-rl/hone/train/checkpoint"
)

// LoopMetrics names the metrics the training loop adds to every job's
// metrics rows (Loop.Run); "updates" only where a step takes several.
func LoopMetrics() []string {
	return []string{"step", "time", "seconds", "trainable_tokens", "tokens", "tokens_per_s", "entropy", "grad_norm", "lr", "updates"}
}

// CheckBestMetric checks --best-metric against what the run can ever
// record, so that a misspelt name is refused before anything is trained
// instead of never naming a best step. train are the names of the job's
// metrics rows (LoopMetrics and its own): a name without "/" must be one
// of them. A name SPLIT/NAME is an eval metric, which hone-inspect
// log-eval records in eval.jsonl: SPLIT must be a split name and NAME one
// of log-eval's own metrics (checkpoint.EvalMetrics) or an environment
// metric, which CheckEvalMetric checks once the inputs are read.
func CheckBestMetric(name string, train []string) error {
	if name == "" {
		return nil
	}
	split, metric, ok := strings.Cut(name, "/")
	if !ok {
		if slices.Contains(train, name) {
			return nil
		}
		return fmt.Errorf("--best-metric %q is not a metric this run records, so no step would ever be best: %s", name, knownMetrics(train, "val"))
	}
	if err := checkpoint.CheckSplit(split); err != nil {
		return fmt.Errorf("--best-metric %q: an eval metric is SPLIT/NAME, and the %v; %s", name, err, knownMetrics(train, "val"))
	}
	if metric == "" {
		return fmt.Errorf("--best-metric %q: the metric's name is missing after %q; %s", name, split+"/", knownMetrics(train, split))
	}
	return nil
}

// CheckEvalMetric checks an eval --best-metric SPLIT/NAME whose NAME is
// not one of log-eval's own: NAME must then be an environment metric.
// env are the metric names the run's input trajectories report, and
// complete says whether they are all the environment reports (trajectory
// files read up front; not JSON Lines chats, which carry no metrics);
// eval are eval.jsonl's rows (checkpoint.Run.ReadEval). The name is
// accepted when the inputs or eval.jsonl hold it; refused when the
// inputs are complete or eval.jsonl already has rows of SPLIT, since the
// split's metrics are then known; otherwise it cannot be checked yet and
// checked is false (hone-inspect log-eval warns when the split it logs
// lacks the run's --best-metric).
func CheckEvalMetric(name string, train, env []string, complete bool, eval map[int]map[string]float64) (checked bool, err error) {
	split, metric, ok := strings.Cut(name, "/")
	if !ok || checkpoint.CheckSplit(split) != nil || slices.Contains(checkpoint.EvalMetrics(), metric) || slices.Contains(env, metric) {
		return true, nil
	}
	logged := map[string]bool{}
	for _, row := range eval {
		for k := range row {
			if s, m, ok := strings.Cut(k, "/"); ok && s == split {
				logged[m] = true
			}
		}
	}
	if logged[metric] {
		return true, nil
	}
	if !complete && len(logged) == 0 {
		return false, nil
	}
	from := "the environment metrics of the input trajectories"
	names := slices.Clone(env)
	if len(logged) > 0 {
		from += " and those eval.jsonl holds for " + split
		for m := range logged {
			if !slices.Contains(names, m) {
				names = append(names, m)
			}
		}
	}
	slices.Sort(names)
	list := "none"
	if len(names) > 0 {
		list = split + "/" + strings.Join(names, ", "+split+"/")
	}
	return true, fmt.Errorf("--best-metric %q: %q is neither a metric hone-inspect log-eval computes nor one of %s (%s), so no step would ever be best; %s",
		name, metric, from, list, knownMetrics(train, split))
}

// knownMetrics lists the names --best-metric takes.
func knownMetrics(train []string, split string) string {
	own := checkpoint.EvalMetrics()
	for i, m := range own {
		own[i] = split + "/" + m
	}
	t := slices.Compact(slices.Sorted(slices.Values(train)))
	return fmt.Sprintf("training metrics: %s; eval metrics (hone-inspect log-eval, SPLIT/NAME): %s, %s/<environment metric>",
		strings.Join(t, ", "), strings.Join(own, ", "), split)
}

package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// RunInput is one training run.
type RunInput struct {
	Name    string
	Metrics *Metrics // required
	// Config is the run's train_config.json, flattened (FlattenConfig),
	// from step ConfigStep; nil when the run folder has none.
	Config     []Param
	ConfigStep int
	// Splits is the run's eval.jsonl (hone-inspect log-eval): eval split
	// metrics ("val/reward") by the step evaluated; nil when it has none.
	Splits *Metrics
	// Saved are the steps whose folders the run holds, ascending: hone-train
	// and log-eval pick the best step among them only, so a step that
	// --save-every left unsaved, or an eval at step 0 (the starting point),
	// is never best. Nil when unknown (a metrics.jsonl without its folder):
	// then every step with the metric counts.
	Saved []float64
}

// Input is everything one page shows. Every run needs its metrics; the
// rest is optional.
type Input struct {
	Runs         []RunInput
	Evals        []EvalRow
	Trajectories *Trajectories // from ReadTrajectories
	// Sources lists the files read, shown at the foot of the page.
	Sources []string
}

// Line is one drawn series of a chart. X is the run's step; the page maps
// it to training time or tokens with the run's own axes.
type Line struct {
	Run  int       `json:"run"` // index into the page's runs
	Name string    `json:"name"`
	X    []float64 `json:"x"`
	Y    []float64 `json:"y"`
	// Lo..Hi shade an inner band (mean ± std, or the quartiles), Min..Max
	// a lighter outer one (the extremes).
	Lo  []float64 `json:"lo,omitempty"`
	Hi  []float64 `json:"hi,omitempty"`
	Min []float64 `json:"min,omitempty"`
	Max []float64 `json:"max,omitempty"`
	// Note says more about each point on hover (which adapter sampled a
	// step's episodes, which step trained on them).
	Note   []string `json:"note,omitempty"`
	Points bool     `json:"points,omitempty"` // markers, no smoothing (sparse data such as evals)
	Dashed bool     `json:"dashed,omitempty"`
}

// Chart is one plot.
type Chart struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	YLabel string `json:"ylabel"`
	// ByLine colours lines by their order rather than by run (eval labels).
	ByLine bool   `json:"byLine,omitempty"`
	Lines  []Line `json:"lines"`
}

// Folded is a chart left out because every line in it is flat: what it
// would have shown is one value per line.
type Folded struct {
	ID, Title string
	Values    []string // "0.002", or "rl: 0.002" with several lines
}

// Table is a plain table; Diff marks rows whose values differ between
// runs.
type Table struct {
	Head []string
	Rows [][]string
	Diff []bool
}

// Section is a titled group of charts.
type Section struct {
	ID, Title, Caption string
	Charts             []Chart
	Folded             []Folded
	Table              *Table
}

// RunRollouts are the steps of one run whose episodes are shown in full.
type RunRollouts struct {
	Run   string
	Steps []*TrajStep
	// Of counts the run's steps that have a rollout; more than len(Steps)
	// when a long run shows some of them (maxRolloutSteps), which the page
	// says.
	Of int
}

// Page is what WriteHTML writes, exposed so that callers and tests can look
// at it without parsing HTML.
type Page struct {
	Runs     []Summary
	Summary  *Table
	Params   *Table // hyperparameters, one column per run; nil when no run has any
	Sections []Section
	Rollouts []RunRollouts
	Notes    []string
	Sources  []string
	axes     []runAxes
}

// Chart returns the chart (drawn, not folded) with the id, or nil.
func (pg *Page) Chart(id string) *Chart {
	for i := range pg.Sections {
		for j := range pg.Sections[i].Charts {
			if pg.Sections[i].Charts[j].ID == id {
				return &pg.Sections[i].Charts[j]
			}
		}
	}
	return nil
}

// FoldedChart returns the folded chart with the id, or nil.
func (pg *Page) FoldedChart(id string) *Folded {
	for i := range pg.Sections {
		for j := range pg.Sections[i].Folded {
			if pg.Sections[i].Folded[j].ID == id {
				return &pg.Sections[i].Folded[j]
			}
		}
	}
	return nil
}

// runAxes are the alternative x axes of a run: cumulative training seconds
// and tokens at each step that logged them (nil when none did), and the
// wall time since the run's first step began (nil unless every row has a
// "time").
type runAxes struct {
	Name   string    `json:"name"`
	Color  string    `json:"color"`
	Steps  []float64 `json:"steps"`
	Time   []float64 `json:"time"`
	Tokens []float64 `json:"tokens"`
	Wall   []float64 `json:"wall"`
}

// known are the trainer's metrics in the order a reader looks for them,
// with a title and a y label; anything else goes to "Other metrics".
var known = []struct{ key, title, ylabel string }{
	{"loss", "Loss", "loss"},
	{"policy_loss", "Policy loss", "policy loss"},
	{"kl", "KL to reference", "KL"},
	{"kl_policy_ref", "KL to reference (--kl-penalty-coef's row mean)", "nats / token"},
	{"entropy", "Entropy", "nats / token"},
	{"grad_norm", "Gradient norm", "L2 norm"},
	{"clip_frac", "Clip fraction", "fraction of tokens"},
	{"lr", "Learning rate", "lr"},
	{"ratio_mean", "Importance ratio mean", "π/π_old"},
	{"sampler_logp_diff_mean", "Trainer − sampler logprob gap (mean |Δ|)", "nats / token"},
	{"sampler_logp_diff_max", "Trainer − sampler logprob gap (max |Δ|)", "nats / token"},
}

// otherTitles names the trainer's bookkeeping series; anything else is
// titled after its key.
var otherTitles = map[string]string{
	"tokens":               "Tokens per step",
	"trainable_tokens":     "Trainable tokens per step",
	"tokens_per_s":         "Throughput (tokens/s)",
	"seconds":              "Step time (s)",
	"groups":               "Groups per step",
	"groups_trainable":     "Trainable groups per step",
	"trajectories":         "Trajectories per step",
	"trajectories_trained": "Trajectories trained per step",
	"dropped_zero_adv":     "Trajectories dropped (zero advantage)",
	"reward_std":           "Reward std",
}

// palette is the Tableau 10 order: distinct, colour-blind tolerable and
// readable on white. Runs take their colour from it in order.
var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}

// Build lays out the page for in.
func Build(ctx context.Context, in Input) (*Page, error) {
	if len(in.Runs) == 0 {
		return nil, fmt.Errorf("report: no runs")
	}
	names := make([]string, len(in.Runs))
	for i, r := range in.Runs {
		if r.Metrics == nil {
			return nil, fmt.Errorf("report: run %q has no metrics", r.Name)
		}
		if slices.Contains(names[:i], r.Name) {
			return nil, fmt.Errorf("report: two runs are called %q; name them apart", r.Name)
		}
		names[i] = r.Name
	}
	pg := &Page{Sources: in.Sources}
	for i, r := range in.Runs {
		for _, m := range []*Metrics{r.Metrics, r.Splits} {
			if m != nil && m.Torn > 0 {
				pg.Notes = append(pg.Notes, fmt.Sprintf("%s:%d: the last line is cut short (the run was stopped while writing it, or is writing it now) and is left out; hone-train drops it when the run resumes.", m.File, m.Torn))
			}
		}
		sum := Summarize(r.Name, r.Metrics)
		sum.bestBy(r)
		pg.Runs = append(pg.Runs, sum)
		axes, err := axesOf(r, palette[i%len(palette)])
		if err != nil {
			return nil, err
		}
		pg.axes = append(pg.axes, axes)
	}
	pg.Summary = summaryTable(pg.Runs)
	pg.Params = paramsTable(in.Runs)
	tr := in.Trajectories
	if tr == nil {
		tr = &Trajectories{}
	}
	sections := []Section{
		rewardSection(in.Runs, tr),
		splitSection(in.Runs),
		trainingSection(in.Runs),
		episodeSection(in.Runs, tr),
		evalSection(in.Runs, in.Evals),
		otherSection(in.Runs),
	}
	for _, s := range sections {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s = fold(s)
		if len(s.Charts) > 0 || len(s.Folded) > 0 || s.Table != nil {
			pg.Sections = append(pg.Sections, s)
		}
	}
	uniqueIDs(pg.Sections)
	pg.Notes = append(pg.Notes, evalRunNotes(names, in.Evals)...)
	pg.Rollouts = rollouts(in.Runs, tr)
	if tr.Unplaced > 0 {
		pg.Notes = append(pg.Notes, fmt.Sprintf("%d episodes of run(s) %s are not shown: none of the runs on this page sampled or trained on them.",
			tr.Unplaced, strings.Join(tr.UnplacedRuns, ", ")))
	}
	if tr.NotFinite > 0 {
		pg.Notes = append(pg.Notes, fmt.Sprintf("%d values of the episodes that are not finite (infinite rewards; infinite or NaN reward components and environment metrics) are left out of the charts; hone-inspect stats shows them.", tr.NotFinite))
	}
	return pg, nil
}

// evalRunNotes says, once for each run name, which eval rows name a run
// that is not on the page: evalSection places them by the first run's
// axes, which a reader on the time or token axis should know.
func evalRunNotes(names []string, rows []EvalRow) []string {
	var notes, told []string
	for _, r := range rows {
		if r.Run == "" || slices.Contains(names, r.Run) || slices.Contains(told, r.Run) {
			continue
		}
		told = append(told, r.Run)
		notes = append(notes, fmt.Sprintf("%s: eval row of run %q, which is not on this page (%s): its time and token axes are those of %s.",
			r.Where, r.Run, strings.Join(names, ", "), names[0]))
	}
	return notes
}

// axesOf computes a run's training-time and token axes from its "seconds"
// and "tokens" metrics. A running sum past the float64 range (rows near
// 1.8e308) is an error naming the metrics file, the key and the step: the
// page's data has no number for +Inf.
func axesOf(r RunInput, color string) (runAxes, error) {
	a := runAxes{Name: r.Name, Color: color, Steps: r.Metrics.Steps}
	cum := func(key string) ([]float64, error) {
		s := r.Metrics.Get(key)
		if s == nil {
			return nil, nil
		}
		out := make([]float64, len(r.Metrics.Steps))
		sum, j := 0.0, 0
		for i, step := range r.Metrics.Steps {
			for j < len(s.X) && s.X[j] <= step {
				sum += s.Y[j]
				if math.IsInf(sum, 0) {
					return nil, fmt.Errorf("%s: the running sum of %q passes the float64 range (1.8e308) at step %s, whose %q is %s: is the column garbled?",
						r.Metrics.File, key, stepText(s.X[j]), key, exact(s.Y[j]))
				}
				j++
			}
			out[i] = sum
		}
		return out, nil
	}
	var err1, err2 error
	a.Time, err1 = cum("seconds")
	a.Tokens, err2 = cum("tokens")
	if err := errors.Join(err1, err2); err != nil {
		return runAxes{}, fmt.Errorf("report: run %q: %w", r.Name, err)
	}
	a.Wall = wallAxis(r.Metrics)
	return a, nil
}

// wallAxis is the wall-clock seconds from the start of a run's first step
// to the end of each step: the "time" each row was written at (Unix
// seconds) less the first row's, plus the first step's own "seconds". Unlike
// the training-time axis it includes what happened between steps
// (collection, scoring, waiting for data). Nil unless every row has a time.
func wallAxis(m *Metrics) []float64 {
	t := m.Get("time")
	if t == nil || len(t.Y) != len(m.Steps) || len(t.Y) == 0 {
		return nil
	}
	start := t.Y[0]
	if s := m.Get("seconds"); s != nil && len(s.X) > 0 && s.X[0] == m.Steps[0] {
		start -= s.Y[0]
	}
	out := make([]float64, len(t.Y))
	for i, y := range t.Y {
		out[i] = y - start
	}
	return out
}

// runLines returns one line of metric key per run that logged it.
func runLines(runs []RunInput, key string) []Line {
	var out []Line
	for i, r := range runs {
		s := r.Metrics.Get(key)
		if s == nil {
			continue
		}
		name := key
		if len(runs) > 1 {
			name = r.Name
		}
		out = append(out, Line{Run: i, Name: name, X: s.X, Y: s.Y})
	}
	return out
}

func trainingSection(runs []RunInput) Section {
	sec := Section{ID: "training", Title: "Training"}
	for _, k := range known {
		if ls := runLines(runs, k.key); len(ls) > 0 {
			sec.Charts = append(sec.Charts, Chart{ID: k.key, Title: k.title, YLabel: k.ylabel, Lines: ls})
		}
	}
	return sec
}

func otherSection(runs []RunInput) Section {
	// "time" (when a row was written) is the wall-time axis, not a chart.
	used := map[string]bool{"reward_mean": true, "reward_std": true, "time": true}
	for _, k := range known {
		used[k.key] = true
	}
	var keys []string
	for _, r := range runs {
		for _, s := range r.Metrics.Series {
			if !used[s.Name] && !slices.Contains(keys, s.Name) {
				keys = append(keys, s.Name)
			}
		}
	}
	// reward_std has a plot of its own only where it is not the band of a
	// reward_mean.
	for _, r := range runs {
		if r.Metrics.Get("reward_std") != nil && r.Metrics.Get("reward_mean") == nil && !slices.Contains(keys, "reward_std") {
			keys = append(keys, "reward_std")
		}
	}
	slices.Sort(keys)
	sec := Section{ID: "other", Title: "Other metrics"}
	for _, k := range keys {
		title := otherTitles[k]
		if title == "" {
			title = humanize(k)
		}
		ls := runLines(runs, k)
		if k == "reward_std" {
			ls = slices.DeleteFunc(ls, func(l Line) bool { return runs[l.Run].Metrics.Get("reward_mean") != nil })
		}
		sec.Charts = append(sec.Charts, Chart{ID: k, Title: title, YLabel: k, Lines: ls})
	}
	return sec
}

// fold moves the charts whose every line is flat out of the grid.
func fold(s Section) Section {
	var keep []Chart
	for _, c := range s.Charts {
		if !flatChart(c) {
			keep = append(keep, c)
			continue
		}
		f := Folded{ID: c.ID, Title: c.Title}
		for _, l := range c.Lines {
			v := exact(l.Y[0])
			if len(c.Lines) > 1 {
				v = l.Name + ": " + v
			}
			f.Values = append(f.Values, v)
		}
		s.Folded = append(s.Folded, f)
	}
	s.Charts = keep
	return s
}

// uniqueIDs makes the ids of the charts, drawn and folded, safe in an
// HTML id and unique on the page: metrics "a b" and "a_b" of an eval file
// both became eval-a_b, so a link to the second went to the first, and
// "a b" in metrics.jsonl kept its space. An id already safe and not taken
// is kept, so that links to it keep working; the others get their safe
// form, with "-2", "-3", ... where that is taken.
func uniqueIDs(secs []Section) {
	var ids []*string
	for i := range secs {
		for j := range secs[i].Charts {
			ids = append(ids, &secs[i].Charts[j].ID)
		}
		for j := range secs[i].Folded {
			ids = append(ids, &secs[i].Folded[j].ID)
		}
	}
	seen := map[string]bool{}
	kept := make([]bool, len(ids))
	for i, id := range ids {
		if safeID(*id) == *id && !seen[*id] {
			seen[*id], kept[i] = true, true
		}
	}
	for i, id := range ids {
		if kept[i] {
			continue
		}
		base := safeID(*id)
		out := base
		for n := 2; seen[out]; n++ {
			out = base + "-" + strconv.Itoa(n)
		}
		seen[out] = true
		*id = out
	}
}

// flatChart reports whether every line of c has two or more points, all at
// one value (bands included). A single point is not flat: it is all there
// is to see.
func flatChart(c Chart) bool {
	if len(c.Lines) == 0 {
		return false
	}
	for _, l := range c.Lines {
		if len(l.X) < 2 {
			return false
		}
		v := l.Y[0]
		for _, ys := range [][]float64{l.Y, l.Lo, l.Hi, l.Min, l.Max} {
			for _, y := range ys {
				if y != v {
					return false
				}
			}
		}
	}
	return true
}

// humanize turns "tokens_per_s" into "Tokens per s".
func humanize(k string) string {
	s := strings.ReplaceAll(k, "_", " ")
	// The first letter, not the first byte: upper-casing one byte of a
	// multi-byte letter ("é", "日") wrote invalid UTF-8 into the page.
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 || r == utf8.RuneError {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

// Render builds the page for in and writes it as HTML to w.
func Render(ctx context.Context, w io.Writer, in Input) error {
	pg, err := Build(ctx, in)
	if err != nil {
		return err
	}
	return pg.WriteHTML(w)
}

package report

import (
	"fmt"
	"github.com/hone-rl/hone/format/runfolder"
	"slices"
	"sort"
	"strings"
)

// trajCaption says where the charts drawn from trajectory files put their
// points; hovering a point names the adapter that sampled it.
const trajCaption = "Episodes from trajectory files are drawn at the step that trained on them, as the run's manifest.json records it; " +
	"files it does not list, at the step of the run's adapter that sampled them (step 0 when another model did). " +
	"Hover a point to see which adapter sampled it and which step trained on it."

// runSteps returns the trajectory steps of run name.
func runSteps(tr *Trajectories, name string) []*TrajStep {
	var out []*TrajStep
	for _, s := range tr.Steps {
		if s.Run == name {
			out = append(out, s)
		}
	}
	return out
}

// trajLines draws one line per run over its trajectory steps: y(s) gives a
// step's value and whether it has one, band fills Lo..Hi and Min..Max.
func trajLines(runs []RunInput, tr *Trajectories, name string, y func(s *TrajStep) (float64, bool), band func(s *TrajStep, l *Line)) []Line {
	var out []Line
	for i, r := range runs {
		l := Line{Run: i, Name: name}
		if len(runs) > 1 {
			l.Name = r.Name
		}
		for _, s := range runSteps(tr, r.Name) {
			v, ok := y(s)
			if !ok {
				continue
			}
			l.X, l.Y, l.Note = append(l.X, s.X), append(l.Y, v), append(l.Note, stepNote(s))
			if band != nil {
				band(s, &l)
			}
		}
		if len(l.X) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// stepNote tells, on hover, where a trajectory step's episodes came from
// and which step trained on them.
func stepNote(s *TrajStep) string {
	var b strings.Builder
	fmt.Fprintf(&b, "sampled by %s", strings.Join(s.Samplers, ", "))
	own := slices.ContainsFunc(s.Samplers, func(sm string) bool {
		served, err := runfolder.ParseServed(sm)
		return err == nil && served.HasStep && served.Run == s.Run
	})
	switch {
	case s.Trained:
		fmt.Fprintf(&b, " · trained at step %s", stepText(s.X))
	case own:
		b.WriteString(" · drawn at the sampling step (no manifest.json lists the file)")
	default:
		b.WriteString(" · drawn at step 0 (no manifest.json lists the file)")
	}
	fmt.Fprintf(&b, " · %d episodes, %d scored", s.Episodes, s.Scored)
	if s.Errors > 0 {
		fmt.Fprintf(&b, ", %d errored", s.Errors)
	}
	fmt.Fprintf(&b, " · %s", strings.Join(s.Files, ", "))
	return b.String()
}

func rewardSection(runs []RunInput, tr *Trajectories) Section {
	sec := Section{ID: "reward", Title: "Reward"}
	var trainer []Line
	for i, r := range runs {
		mean := r.Metrics.Get("reward_mean")
		if mean == nil {
			continue
		}
		l := Line{Run: i, Name: "reward_mean", X: mean.X, Y: mean.Y}
		if len(runs) > 1 {
			l.Name = r.Name
		}
		if sd := r.Metrics.Get("reward_std"); sd != nil {
			l.Lo, l.Hi = bandAt(mean, sd)
		}
		trainer = append(trainer, l)
	}
	if len(trainer) > 0 {
		sec.Charts = append(sec.Charts, Chart{ID: "reward_mean", Title: "Reward (trainer, mean ± std)", YLabel: "reward", Lines: trainer})
	}
	dist := trajLines(runs, tr, "reward", func(s *TrajStep) (float64, bool) {
		if s.Scored == 0 {
			return 0, false
		}
		sum, mean := 0.0, 0.0
		for i, r := range s.Rewards {
			sum += r
			mean = runningMean(mean, r, i+1)
		}
		return meanOfFinite(sum, mean, len(s.Rewards)), true
	}, func(s *TrajStep, l *Line) {
		l.Lo, l.Hi = append(l.Lo, s.Quantile(0.25)), append(l.Hi, s.Quantile(0.75))
		l.Min, l.Max = append(l.Min, s.Rewards[0]), append(l.Max, s.Rewards[len(s.Rewards)-1])
	})
	if len(dist) > 0 {
		sec.Caption = trajCaption
		sec.Charts = append(sec.Charts, Chart{ID: "traj-reward", Title: "Reward per episode (mean, quartiles, range)", YLabel: "reward", Lines: dist})
	}
	for _, name := range keysOf(tr, func(s *TrajStep) map[string]*Mean { return s.Components }) {
		ls := trajLines(runs, tr, name, meanIn(func(s *TrajStep) map[string]*Mean { return s.Components }, name), nil)
		if len(ls) == 0 {
			continue // never finite: counted in the page's note, no chart to draw
		}
		sec.Charts = append(sec.Charts, Chart{ID: "component-" + safeID(name), Title: "Reward component: " + name, YLabel: name, Lines: ls})
	}
	return sec
}

func episodeSection(runs []RunInput, tr *Trajectories) Section {
	sec := Section{ID: "episodes", Title: "Episodes"}
	if len(tr.Steps) == 0 {
		return sec
	}
	sec.Caption = trajCaption
	unit := tr.LengthUnit
	length := trajLines(runs, tr, "length", func(s *TrajStep) (float64, bool) {
		m := s.Length(unit)
		return m.Value(), m.N > 0
	}, func(s *TrajStep, l *Line) {
		m := s.Length(unit)
		l.Min, l.Max = append(l.Min, m.Min), append(l.Max, m.Max)
	})
	sec.Charts = append(sec.Charts, Chart{ID: "traj-length", Title: "Completion length (" + unit + " per episode)", YLabel: unit, Lines: length})
	envMetrics := func(s *TrajStep) map[string]*Mean { return s.EnvMetrics }
	for _, name := range keysOf(tr, envMetrics) {
		ls := trajLines(runs, tr, name, meanIn(envMetrics, name), nil)
		if len(ls) == 0 {
			continue // never finite: counted in the page's note, no chart to draw
		}
		sec.Charts = append(sec.Charts, Chart{ID: "env-" + safeID(name), Title: "Env metric: " + name + " (mean)", YLabel: name, Lines: ls})
	}
	count := func(f func(s *TrajStep) int) func(s *TrajStep) (float64, bool) {
		return func(s *TrajStep) (float64, bool) { return float64(f(s)), true }
	}
	sec.Charts = append(sec.Charts,
		Chart{ID: "traj-episodes", Title: "Episodes per step", YLabel: "episodes", Lines: trajLines(runs, tr, "episodes", count(func(s *TrajStep) int { return s.Episodes }), nil)},
		Chart{ID: "traj-errors", Title: "Errored episodes per step", YLabel: "episodes", Lines: trajLines(runs, tr, "errored", count(func(s *TrajStep) int { return s.Errors }), nil)},
		Chart{ID: "traj-unscored", Title: "Unscored episodes per step", YLabel: "episodes", Lines: trajLines(runs, tr, "unscored", count(func(s *TrajStep) int { return s.Episodes - s.Scored }), nil)})
	return sec
}

// keysOf lists the names of a per-step map over every step, sorted.
func keysOf(tr *Trajectories, m func(s *TrajStep) map[string]*Mean) []string {
	var out []string
	for _, s := range tr.Steps {
		for k := range m(s) {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

func meanIn(m func(s *TrajStep) map[string]*Mean, name string) func(s *TrajStep) (float64, bool) {
	return func(s *TrajStep) (float64, bool) {
		v := m(s)[name]
		if v == nil || v.N == 0 {
			return 0, false
		}
		return v.Value(), true
	}
}

// safeID keeps a name usable in an HTML id.
func safeID(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

// bandAt returns mean-std and mean+std at the steps of mean; steps without
// a std get a zero-width band.
func bandAt(mean, sd *Series) (lo, hi []float64) {
	at := make(map[float64]float64, len(sd.X))
	for i, x := range sd.X {
		at[x] = sd.Y[i]
	}
	lo, hi = make([]float64, len(mean.X)), make([]float64, len(mean.X))
	for i, x := range mean.X {
		lo[i], hi[i] = mean.Y[i]-at[x], mean.Y[i]+at[x]
	}
	return lo, hi
}

// splitSection charts the eval splits of each run's eval.jsonl
// (hone-inspect log-eval), one chart a metric, each split's reward first,
// one line a run, drawn as points: a split is evaluated at some steps only.
func splitSection(runs []RunInput) Section {
	sec := Section{ID: "splits", Title: "Eval splits", Caption: "hone-inspect log-eval: episodes each step played on a held-out split, by the step evaluated"}
	var keys []string
	for _, r := range runs {
		if r.Splits == nil {
			continue
		}
		for _, s := range r.Splits.Series {
			if !slices.Contains(keys, s.Name) {
				keys = append(keys, s.Name)
			}
		}
	}
	slices.Sort(keys)
	sort.SliceStable(keys, func(i, j int) bool {
		return strings.HasSuffix(keys[i], "/reward") && !strings.HasSuffix(keys[j], "/reward")
	})
	for _, k := range keys {
		c := Chart{ID: "split-" + safeID(k), Title: k, YLabel: k}
		for i, r := range runs {
			if r.Splits == nil {
				continue
			}
			if ser := r.Splits.Get(k); ser != nil {
				name := k
				if len(runs) > 1 {
					name = r.Name
				}
				c.Lines = append(c.Lines, Line{Run: i, Name: name, X: ser.X, Y: ser.Y, Points: true})
			}
		}
		sec.Charts = append(sec.Charts, c)
	}
	return sec
}

func evalSection(runs []RunInput, rows []EvalRow) Section {
	sec := Section{ID: "eval", Title: "Evaluation"}
	if len(rows) == 0 {
		return sec
	}
	var metrics, labels, settings []string
	for _, r := range rows {
		if !slices.Contains(labels, r.Label) {
			labels = append(labels, r.Label)
		}
		for _, k := range sortedKeys(r.Metrics) {
			if !slices.Contains(metrics, k) {
				metrics = append(metrics, k)
			}
		}
		for _, k := range sortedKeys(r.Settings) {
			if !slices.Contains(settings, k) {
				settings = append(settings, k)
			}
		}
	}
	runIndex := func(name string) int {
		if i := slices.IndexFunc(runs, func(r RunInput) bool { return r.Name == name }); i >= 0 {
			return i
		}
		return 0
	}
	for _, k := range metrics {
		c := Chart{ID: "eval-" + safeID(k), Title: "Eval: " + humanize(k), YLabel: k, ByLine: true}
		for _, lab := range labels {
			var pts []EvalRow
			for _, r := range rows {
				if _, ok := r.Metrics[k]; ok && r.Label == lab {
					pts = append(pts, r)
				}
			}
			if len(pts) == 0 {
				continue
			}
			sort.SliceStable(pts, func(i, j int) bool { return pts[i].Step < pts[j].Step })
			l := Line{Name: lab, Points: true, Run: runIndex(pts[0].Run)}
			for _, p := range pts {
				l.X, l.Y, l.Note = append(l.X, p.Step), append(l.Y, p.Metrics[k]), append(l.Note, p.Where)
			}
			c.Lines = append(c.Lines, l)
		}
		sec.Charts = append(sec.Charts, c)
	}
	sec.Table = evalTable(rows, settings, metrics)
	return sec
}

// evalTable lists every eval row by step: label, step, how it ran, what it
// scored.
func evalTable(rows []EvalRow, settings, metrics []string) *Table {
	t := &Table{Head: append(append([]string{"label", "step"}, settings...), metrics...)}
	rows = slices.Clone(rows)
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Step < rows[j].Step })
	for _, r := range rows {
		row := []string{r.Label, stepText(r.Step)}
		for _, k := range settings {
			row = append(row, r.Settings[k])
		}
		for _, k := range metrics {
			v, ok := r.Metrics[k]
			if ok {
				row = append(row, num(v))
			} else {
				row = append(row, "")
			}
		}
		t.Rows, t.Diff = append(t.Rows, row), append(t.Diff, false)
	}
	return t
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// paramsTable puts the runs' hyperparameters side by side; rows whose
// values differ between runs are marked.
func paramsTable(runs []RunInput) *Table {
	t := &Table{Head: []string{"parameter"}}
	var keys []string
	vals := map[string][]string{}
	have := false
	for i, r := range runs {
		head := r.Name
		if r.Config != nil {
			have = true
			head += fmt.Sprintf(" (step %d)", r.ConfigStep)
		}
		t.Head = append(t.Head, head)
		for _, p := range r.Config {
			if vals[p.Key] == nil {
				keys = append(keys, p.Key)
				vals[p.Key] = make([]string, len(runs))
			}
			vals[p.Key][i] = p.Value
		}
	}
	if !have {
		return nil
	}
	for _, k := range keys {
		v := vals[k]
		diff := false
		for _, x := range v[1:] {
			diff = diff || x != v[0]
		}
		t.Rows, t.Diff = append(t.Rows, append([]string{k}, v...)), append(t.Diff, diff)
	}
	return t
}

// maxRolloutSteps bounds the steps whose rollouts a page carries; a long
// run shows that many, evenly spaced, the first and last among them.
const maxRolloutSteps = 50

func rollouts(runs []RunInput, tr *Trajectories) []RunRollouts {
	var out []RunRollouts
	for _, r := range runs {
		var steps []*TrajStep
		for _, s := range runSteps(tr, r.Name) {
			if s.Rollout != nil {
				steps = append(steps, s)
			}
		}
		of := len(steps)
		if n := len(steps); n > maxRolloutSteps {
			thin := make([]*TrajStep, 0, maxRolloutSteps)
			for i := 0; i < maxRolloutSteps; i++ {
				thin = append(thin, steps[i*(n-1)/(maxRolloutSteps-1)])
			}
			steps = thin
		}
		if len(steps) > 0 {
			out = append(out, RunRollouts{Run: r.Name, Steps: steps, Of: of})
		}
	}
	return out
}

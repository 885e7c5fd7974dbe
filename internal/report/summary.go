package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Summary is the table at the top of the page. Has* fields say whether the
// metrics carried the key the figure comes from.
type Summary struct {
	Run       string
	Rows      int     // metrics rows (steps trained)
	FirstStep float64 // step of the first row
	LastStep  float64 // step of the last row

	HasReward   bool
	FirstReward float64 // reward_mean of the first row that has one
	LastReward  float64 // reward_mean of the last row that has one
	BestStep    float64 // step of the highest reward_mean (the first, on ties)
	BestReward  float64

	HasTokens   bool
	TotalTokens float64 // sum of "tokens" over rows

	HasSeconds  bool
	WallSeconds float64 // sum of "seconds" over rows

	HasWall  bool
	WallSpan float64 // wall seconds from the first step's start to the last step's end (wallAxis)

	// The best step by the run's --best-metric (train_config.json's
	// best_metric and best_mode), a training or an eval split metric
	// (the first, on ties), as hone-train and log-eval pick it: among the
	// run's saved steps (RunInput.Saved) when they are known.
	BestMetric      string
	BestMax         bool
	HasBestMetric   bool
	BestMetricStep  float64
	BestMetricValue float64
	// BestMetricUnsaved: the metric was logged, but at no saved step.
	BestMetricUnsaved bool
}

// bestBy fills the Best* fields from r's config and its metrics or eval
// splits.
func (s *Summary) bestBy(r RunInput) {
	s.BestMax = true
	for _, p := range r.Config {
		switch p.Key {
		case "best_metric":
			s.BestMetric = p.Value
		case "best_mode":
			s.BestMax = p.Value != "min"
		}
	}
	if s.BestMetric == "" {
		return
	}
	ser := r.Metrics.Get(s.BestMetric)
	if ser == nil && r.Splits != nil {
		ser = r.Splits.Get(s.BestMetric)
	}
	if ser == nil {
		return
	}
	for i, y := range ser.Y {
		if r.Saved != nil && !slices.Contains(r.Saved, ser.X[i]) {
			s.BestMetricUnsaved = true
			continue
		}
		if !s.HasBestMetric || (s.BestMax && y > s.BestMetricValue) || (!s.BestMax && y < s.BestMetricValue) {
			s.HasBestMetric, s.BestMetricStep, s.BestMetricValue = true, ser.X[i], y
		}
	}
}

// Summarize computes the summary table of a run from its metrics.
func Summarize(run string, m *Metrics) Summary {
	s := Summary{Run: run, Rows: len(m.Steps)}
	if len(m.Steps) > 0 {
		s.FirstStep, s.LastStep = m.Steps[0], m.Steps[len(m.Steps)-1]
	}
	if r := m.Get("reward_mean"); r != nil && len(r.Y) > 0 {
		s.HasReward = true
		s.FirstReward, s.LastReward = r.Y[0], r.Y[len(r.Y)-1]
		s.BestStep, s.BestReward = r.X[0], r.Y[0]
		for i, y := range r.Y {
			if y > s.BestReward {
				s.BestStep, s.BestReward = r.X[i], y
			}
		}
	}
	if t := m.Get("tokens"); t != nil {
		s.HasTokens = true
		for _, y := range t.Y {
			s.TotalTokens += y
		}
	}
	if t := m.Get("seconds"); t != nil {
		s.HasSeconds = true
		for _, y := range t.Y {
			s.WallSeconds += y
		}
	}
	if w := wallAxis(m); w != nil {
		s.HasWall, s.WallSpan = true, w[len(w)-1]
	}
	return s
}

// rows formats one run's column of the summary table.
func (s Summary) rows() [][2]string {
	steps := strconv.Itoa(s.Rows)
	if s.Rows > 0 {
		steps += fmt.Sprintf(" (step %s to %s)", stepText(s.FirstStep), stepText(s.LastStep))
	}
	r := [][2]string{{"steps", steps}}
	if s.HasReward {
		r = append(r,
			[2]string{"reward mean, first → last", fmt.Sprintf("%s → %s (%+.4g)", num(s.FirstReward), num(s.LastReward), s.LastReward-s.FirstReward)},
			[2]string{"best step", fmt.Sprintf("%s (reward mean %s)", stepText(s.BestStep), num(s.BestReward))})
	}
	if s.BestMetric != "" {
		mode := "max"
		if !s.BestMax {
			mode = "min"
		}
		v := "not logged yet"
		switch {
		case s.HasBestMetric:
			v = fmt.Sprintf("%s (%s %s)", stepText(s.BestMetricStep), s.BestMetric, num(s.BestMetricValue))
		case s.BestMetricUnsaved:
			v = "not logged at a saved step yet"
		}
		r = append(r, [2]string{fmt.Sprintf("best step by --best-metric %s (%s)", s.BestMetric, mode), v})
	}
	if s.HasTokens {
		r = append(r, [2]string{"total tokens", sumText(s.TotalTokens, groupDigits)})
	}
	if s.HasSeconds {
		wall := sumText(s.WallSeconds, seconds)
		// The sum of the steps' own times: collection and scoring between
		// steps are not in it.
		r = append(r, [2]string{"training time (sum of step times)", wall})
	}
	if s.HasWall {
		r = append(r, [2]string{"wall time (first step to last)", seconds(s.WallSpan)})
	}
	return r
}

// sumText writes the sum v of a metric's rows with format, or, where the
// sum passed the float64 range (rows near 1.8e308), says so: format wrote
// "+Inf", which reads as a value.
func sumText(v float64, format func(float64) string) string {
	switch {
	case math.IsInf(v, 1):
		return "past 1.8e308 (the rows' sum overflows)"
	case math.IsInf(v, -1):
		return "past -1.8e308 (the rows' sum overflows)"
	}
	return format(v)
}

// seconds writes a duration for reading: 3 digits under 10s, else whole
// seconds ("1h2m3s"), and past a time.Duration's range (292 years), where
// the conversion overflowed to "-2562047h47m16.854775808s", as seconds.
func seconds(x float64) string {
	if x < 10 || x >= 9e9 { // 9e9 s is just under math.MaxInt64 ns
		return strconv.FormatFloat(x, 'g', 3, 64) + "s"
	}
	return time.Duration(x * float64(time.Second)).Round(time.Second).String()
}

// summaryTable puts the runs' summaries side by side, one column a run.
func summaryTable(runs []Summary) *Table {
	t := &Table{Head: []string{""}}
	var labels []string
	cells := map[string][]string{}
	for i, s := range runs {
		t.Head = append(t.Head, s.Run)
		for _, kv := range s.rows() {
			if cells[kv[0]] == nil {
				labels = append(labels, kv[0])
				cells[kv[0]] = make([]string, len(runs))
			}
			cells[kv[0]][i] = kv[1]
		}
	}
	for _, l := range labels {
		t.Rows = append(t.Rows, append([]string{l}, cells[l]...))
		t.Diff = append(t.Diff, false)
	}
	return t
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', 5, 64) }

// stepText writes a step (a whole number up to 2^53) in full: num rounded
// step 123456 to "1.2346e+05", which step 123457 reads as too.
func stepText(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// exact writes v in the fewest digits that read back as v.
func exact(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// groupDigits writes 1234567 as "1 234 567" (thin spaces read in any locale).
func groupDigits(v float64) string {
	s := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteString("\u2009")
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

package formula

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agnivade/levenshtein"
)

// maxSeenNames caps the metric and component names kept for the hint of
// an Unseen name: rows naming more are rare, and the hint a few of them.
const maxSeenNames = 1000

// seen records, over the rows Eval scored, which of the names the
// expression reads were on any row. A name read under a guard (judeg ??
// 0, metrics["judeg"] ?? 0) is nil where a row lacks it, not an error:
// misspelt, it would give the fallback on every row without a word.
type seen struct {
	mu    sync.Mutex
	rows  int64
	found []bool // per Scorer.watch
	// left counts the names not yet found: at 0 no warning can come, and
	// Eval does no more bookkeeping.
	left atomic.Int64
	// names the rows and their groups had, for the hint
	metrics, comps, group map[string]bool
	// mix is, per Scorer.names, the rows on which the bare name was a
	// component and a metric alone (Mixed); mixLeft counts the names
	// not yet seen both ways that can be.
	mix     []mix
	mixLeft atomic.Int64
}

// mix is the first row (trajectory ID) on which a bare name read a
// component, and the first on which, without one, it read a metric.
type mix struct{ comp, metric string }

// Mixed is a bare name the expression reads that was a component on
// some rows and, without one, a metric on others: read differently from
// row to row.
type Mixed struct {
	Name                    string
	ComponentRow, MetricRow string // a trajectory ID of each kind
}

// Unseen is a name the expression reads that no row it scored had.
type Unseen struct {
	Name    string // as the expression reads it: judeg, metrics["judeg"]
	Rows    int64  // rows scored
	Closest string // the rows' name nearest in spelling, "" when none is near
	Has     string // what the rows had: "metrics a, b; components env"
	// Tested: only an in test reaches the name ("judeg" in metrics ?
	// metrics.judeg : 0, "judeg" in components ? judeg : 0), so no row
	// read it as nil: the test was false.
	Tested bool
}

// watchNames lists what record looks for: the names the expression
// means to go on without. Each bare name that every read guards (one read
// unguarded fails a row without it), but the reward so far, which no one
// misspells, and each constant lookup that a read guards or a test asks
// for (metrics.x ?? 0, "x" in metrics ? metrics.x : 0): not one read only
// in a branch, which a file may never take (metadata["env"] == "guess" ?
// metrics.solved : metrics.won).
func watchNames(names, must []string, lookups []lookup, tested map[lookup]bool) []lookup {
	var w []lookup
	for _, n := range names {
		if n != rewardName && !slices.Contains(must, n) {
			w = append(w, lookup{"", n})
		}
	}
	for _, l := range lookups {
		if tested[l] {
			w = append(w, l)
		}
	}
	return w
}

// record notes which watched names a row the expression scored has:
// metrics, comps and group (its group's metrics) are its maps as Eval
// built them.
func (s *Scorer) record(id string, metrics, comps, group map[string]any) {
	if s.seen.left.Load() == 0 && s.seen.mixLeft.Load() == 0 {
		return
	}
	s.seen.mu.Lock()
	defer s.seen.mu.Unlock()
	s.recordMix(id, metrics, comps)
	if s.seen.left.Load() == 0 {
		return // every watched name found: the rows count no warning
	}
	s.seen.rows++
	for i, w := range s.watch {
		if s.seen.found[i] {
			continue
		}
		_, inComps := comps[w.key]
		_, inMetrics := metrics[w.key]
		_, inGroup := group[w.key]
		// A bare name reads a component, or a metric unless the chain
		// writes the name (ComponentNames).
		if w.in == "components" && inComps || w.in == "metrics" && inMetrics || w.in == groupMetricsName && inGroup ||
			w.in == "" && (inComps || inMetrics && !s.onlyComps[w.key]) {
			s.seen.found[i] = true
			s.seen.left.Add(-1)
		}
	}
	for k := range metrics {
		if len(s.seen.metrics) < maxSeenNames {
			s.seen.metrics[k] = true
		}
	}
	for k := range comps {
		if len(s.seen.comps) < maxSeenNames {
			s.seen.comps[k] = true
		}
	}
	for k := range group {
		if len(s.seen.group) < maxSeenNames {
			s.seen.group[k] = true
		}
	}
}

// mixWatched counts the bare names that can read a component on one row
// and a metric on another: not the reward, nor a name ComponentNames
// makes the component only, nor one read only where an in test showed
// it a component.
func (s *Scorer) mixWatched() int {
	n := 0
	for _, name := range s.names {
		if name != rewardName && !s.onlyComps[name] && !s.compReads[name] {
			n++
		}
	}
	return n
}

// recordMix notes, for each bare name, whether the row id holds it as a
// component or, without one, as a metric. Under s.seen.mu.
func (s *Scorer) recordMix(id string, metrics, comps map[string]any) {
	if s.seen.mixLeft.Load() == 0 {
		return
	}
	for i, name := range s.names {
		m := &s.seen.mix[i]
		if name == rewardName || s.onlyComps[name] || s.compReads[name] || m.comp != "" && m.metric != "" {
			continue
		}
		_, inComps := comps[name]
		_, inMetrics := metrics[name]
		switch {
		case inComps && m.comp == "":
			m.comp = id
		case !inComps && inMetrics && m.metric == "":
			m.metric = id
		default:
			continue
		}
		if m.comp != "" && m.metric != "" {
			s.seen.mixLeft.Add(-1)
		}
	}
}

// Mixed returns the bare names the expression reads that were a
// component on some rows it scored and a metric alone on others, in the
// order of its sorted names. A component shadows a metric of its name,
// so such a name read two different things: a file joining rows an
// earlier chain scored (or imported with that component) and rows
// without it.
func (s *Scorer) Mixed() []Mixed {
	s.seen.mu.Lock()
	defer s.seen.mu.Unlock()
	var out []Mixed
	for i, name := range s.names {
		if m := s.seen.mix[i]; m.comp != "" && m.metric != "" {
			out = append(out, Mixed{Name: name, ComponentRow: m.comp, MetricRow: m.metric})
		}
	}
	return out
}

// Unseen returns the names the expression reads that no row it scored
// had, in the order of the expression's sorted names, then lookups,
// then the keys only tested for; none when it scored no row.
func (s *Scorer) Unseen() []Unseen {
	s.seen.mu.Lock()
	defer s.seen.mu.Unlock()
	if s.seen.rows == 0 {
		return nil
	}
	metrics, comps, group := sortedKeys(s.seen.metrics), sortedKeys(s.seen.comps), sortedKeys(s.seen.group)
	var has []string
	if len(group) > 0 {
		has = append(has, "group metrics "+listSome(group))
	}
	if len(metrics) > 0 {
		has = append(has, "metrics "+listSome(metrics))
	}
	if len(comps) > 0 {
		has = append(has, "components "+listSome(comps))
	}
	if len(has) == 0 {
		has = append(has, "no metrics or components")
	}
	var out []Unseen
	for i, w := range s.watch {
		if s.seen.found[i] {
			continue
		}
		u := Unseen{Name: w.key, Rows: s.seen.rows, Has: strings.Join(has, "; "), Tested: s.onlyTested[w]}
		cands := append(slices.Clone(metrics), comps...)
		switch w.in {
		case "metrics":
			cands = metrics
		case "components":
			cands = comps
		case groupMetricsName:
			cands = group
		}
		if w.in != "" {
			u.Name = fmt.Sprintf("%s[%q]", w.in, w.key)
		}
		u.Closest = closest(w.key, cands)
		if _, ok := s.seen.group[w.key]; ok && w.in != groupMetricsName {
			// The group's metric of that very name, which only
			// group_metrics reads: nearer than any misspelling.
			u.Closest = fmt.Sprintf("%s[%q]", groupMetricsName, w.key)
		}
		out = append(out, u)
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// listSome joins names, the first 20 of them: a hint, not an inventory.
func listSome(names []string) string {
	const most = 20
	if len(names) <= most {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s, and %d more", strings.Join(names[:most], ", "), len(names)-most)
}

// closest returns the candidate nearest name in edit distance, when it is
// near enough to be a misspelling of it (a third of its length, plus one:
// judeg for judge), "" otherwise. Ties go to the first in order. The
// edits must leave part of name: n is one edit from k, and no misspelling
// of it.
func closest(name string, cands []string) string {
	n := len([]rune(name))
	best, bestD := "", min(1+n/3+1, n)
	for _, c := range cands {
		if d := levenshtein.ComputeDistance(name, c); d < bestD && c != name {
			best, bestD = c, d
		}
	}
	return best
}

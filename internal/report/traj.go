package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/format/trajectory"
)

// TrajFile is one trajectory file and, when a run's manifest.json lists it
// as consumed, the run and the step that trained on it.
type TrajFile struct {
	Path string
	// Open opens the file (nil: fileset.Open of Path); an input set's
	// member, such as its copy of stdin, is opened through it.
	Open func(context.Context) (*fileset.File, error)
	Run  string // "" when no run's manifest lists the file
	Step int    // the run's step after training on it
}

// Trajectories is what the trajectory files say, per run and step.
type Trajectories struct {
	Steps []*TrajStep // sorted by run (in the order given) and X
	// Unplaced counts episodes that belong to none of the runs (their run
	// field and sampling adapter name another run, and no run trained on
	// their file); UnplacedRuns names those runs.
	Unplaced     int
	UnplacedRuns []string
	// NotFinite counts the infinite rewards, reward components and
	// environment metrics left out of the figures (JSON, and so the page's
	// charts, cannot hold them; hone-train trains on no infinite reward).
	// A NaN reward is unscored, as hone-train and hone-inspect stats take
	// it, and is not counted here.
	NotFinite int
	// LengthUnit is "tokens" when every policy turn carried its sampled
	// token ids, "characters" otherwise (completion length is then counted
	// in characters of the text).
	LengthUnit string
}

// TrajStep summarizes the episodes of one run drawn at one step.
type TrajStep struct {
	Run string
	// X is where the episodes are drawn on the run's step axis: the step
	// that trained on them when Trained, else the step of the run's own
	// adapter that sampled them, or 0 (before the first update) when
	// another model sampled them and no manifest says when they were used.
	X       float64
	Trained bool
	// Samplers are the adapters (or base models) that produced the
	// episodes, "warmup@300"; Files the base names of their files.
	Samplers []string
	Files    []string

	Episodes, Scored, Errors int
	Rewards                  []float64 // scored rewards, sorted
	Components               map[string]*Mean
	EnvMetrics               map[string]*Mean
	tokens, chars            Mean // completion length per episode
	Rollout                  *Rollout
}

// Mean accumulates a mean of finite values with its extremes. A sum of
// values near the float64 limit overflows to +Inf, which the page's JSON
// cannot hold: the running mean, which does not, stands in for it then.
type Mean struct {
	N                   int
	Sum, Min, Max, mean float64
}

func (m *Mean) add(v float64) {
	if m.N == 0 || v < m.Min {
		m.Min = v
	}
	if m.N == 0 || v > m.Max {
		m.Max = v
	}
	m.N++
	m.Sum += v
	m.mean = runningMean(m.mean, v, m.N)
}

// runningMean is the mean of n values, given mean, that of the first
// n-1, and v, the n-th; it does not overflow where the values do not.
func runningMean(mean, v float64, n int) float64 {
	d := v - mean
	if math.IsInf(d, 0) {
		return mean + (v/float64(n) - mean/float64(n))
	}
	return mean + d/float64(n)
}

// meanOfFinite is the mean of n finite values whose sum is sum and
// running mean is mean: the sum's, exact to a rounding, unless it
// overflowed.
func meanOfFinite(sum, mean float64, n int) float64 {
	if n == 0 {
		return 0
	}
	if math.IsInf(sum, 0) {
		return mean
	}
	return sum / float64(n)
}

// Value is the mean (0 when empty).
func (m Mean) Value() float64 {
	return meanOfFinite(m.Sum, m.mean, m.N)
}

// Length is the completion length per episode in the Trajectories'
// LengthUnit.
func (s *TrajStep) Length(unit string) Mean {
	if unit == "tokens" {
		return s.tokens
	}
	return s.chars
}

// Quantile returns the q-quantile of the step's rewards (linear between
// order statistics, as numpy's default); 0 when none are scored.
func (s *TrajStep) Quantile(q float64) float64 {
	n := len(s.Rewards)
	if n == 0 {
		return 0
	}
	pos := q * float64(n-1)
	lo := int(math.Floor(pos))
	if lo >= n-1 {
		return s.Rewards[n-1]
	}
	a, b, f := s.Rewards[lo], s.Rewards[lo+1], pos-float64(lo)
	if d := b - a; !math.IsInf(d, 0) {
		return a + f*d
	}
	// b-a overflowed (rewards near ±1e308): the weighted form does not.
	return (1-f)*a + f*b
}

// Rollout is one group of a step shown in full: its best and worst episode.
type Rollout struct {
	GroupID, ScenarioID, Env string
	Episodes                 int // in the group
	Best, Worst              *Episode
	spread                   float64
}

// Episode is one trajectory as the page shows it.
type Episode struct {
	ID          string
	Sampler     string
	SampledStep int64
	File        string
	Reward      *float64
	Components  []trajectory.RewardComponent
	Metrics     []Param
	Error       string
	Messages    []ShownMessage // long contents cut, token ids dropped
	Omitted     int            // messages left out in the middle
	OmittedAt   int            // index in Messages where they were
}

// ShownMessage is a message as the page shows it: its text, and Parts,
// which says what of its content is not text ("1 content part not shown:
// image_url"; "" when nothing is left out), so that an image-only turn
// does not read as an empty one.
type ShownMessage struct {
	trajectory.Message
	Parts string
	// MoreToolCalls counts the tool calls left out after the first
	// maxShownToolCalls.
	MoreToolCalls int
}

// Limits on what one shown episode carries, so that a page of long agent
// runs stays a size a browser opens quickly.
const (
	maxShownMessages  = 40
	maxShownRunes     = 4000
	maxShownToolCalls = 20 // of one turn
)

// ReadTrajectories reads the trajectory files and summarizes their
// episodes for the named runs (see TrajStep.X for where each is drawn).
func ReadTrajectories(ctx context.Context, files []TrajFile, runs []string) (*Trajectories, error) {
	b := &trajBuilder{runs: runs, steps: map[stepKey]*TrajStep{}, unplaced: map[string]bool{}, allIDs: true}
	for _, f := range files {
		if err := b.readFile(ctx, f); err != nil {
			return nil, err
		}
	}
	out := &Trajectories{Unplaced: b.nUnplaced, NotFinite: b.notFinite, LengthUnit: "characters"}
	if b.allIDs {
		out.LengthUnit = "tokens"
	}
	for r := range b.unplaced {
		out.UnplacedRuns = append(out.UnplacedRuns, r)
	}
	sort.Strings(out.UnplacedRuns)
	for _, s := range b.steps {
		sort.Float64s(s.Rewards)
		out.Steps = append(out.Steps, s)
	}
	order := map[string]int{}
	for i, r := range runs {
		order[r] = i
	}
	sort.Slice(out.Steps, func(i, j int) bool {
		a, c := out.Steps[i], out.Steps[j]
		if a.Run != c.Run {
			return order[a.Run] < order[c.Run]
		}
		return a.X < c.X
	})
	return out, nil
}

type stepKey struct {
	run string
	x   float64
}

type trajBuilder struct {
	runs      []string
	steps     map[stepKey]*TrajStep
	unplaced  map[string]bool
	nUnplaced int
	notFinite int  // values left out: infinite, or a NaN other than a reward
	allIDs    bool // every policy turn so far had token ids
}

func (b *trajBuilder) readFile(ctx context.Context, f TrajFile) error {
	open := f.Open
	if open == nil {
		open = func(ctx context.Context) (*fileset.File, error) { return fileset.Open(ctx, f.Path) }
	}
	file, err := open(ctx)
	if err != nil {
		return fmt.Errorf("report: trajectories: %w", err)
	}
	defer file.Close()
	r, err := trajectory.NewReader(f.Path, file, file.Size)
	if err != nil {
		return fmt.Errorf("report: trajectories: %w", err)
	}
	defer r.Close()
	for {
		g, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("report: trajectories: %w", err)
		}
		b.addGroup(f, g)
	}
}

// sampler names what produced t: its adapter, else its model.
func sampler(t *trajectory.Trajectory) string {
	if t.Adapter != "" {
		return t.Adapter
	}
	if t.Model != "" {
		return t.Model
	}
	return "unknown model"
}

// place says which run and step t is drawn at (see TrajStep.X).
func (b *trajBuilder) place(f TrajFile, t *trajectory.Trajectory) (key stepKey, trained, ok bool) {
	if f.Run != "" {
		return stepKey{f.Run, float64(f.Step)}, true, true
	}
	if served, err := runfolder.ParseServed(t.Adapter); err == nil && served.HasStep && slices.Contains(b.runs, served.Run) {
		return stepKey{served.Run, float64(t.Step)}, false, true
	}
	owner := ""
	switch {
	case slices.Contains(b.runs, t.Run):
		owner = t.Run
	case len(b.runs) == 1:
		owner = b.runs[0]
	default:
		return stepKey{}, false, false
	}
	return stepKey{owner, 0}, false, true
}

func (b *trajBuilder) addGroup(f TrajFile, g trajectory.Group) {
	if len(g.Trajectories) == 0 {
		return
	}
	key, trained, ok := b.place(f, &g.Trajectories[0])
	if !ok {
		b.nUnplaced += len(g.Trajectories)
		name := g.Trajectories[0].Run
		if name == "" {
			name = "(no run name)"
		}
		b.unplaced[name] = true
		return
	}
	s := b.steps[key]
	if s == nil {
		s = &TrajStep{Run: key.run, X: key.x, Trained: trained, Components: map[string]*Mean{}, EnvMetrics: map[string]*Mean{}}
		b.steps[key] = s
	}
	if base := filepath.Base(f.Path); !slices.Contains(s.Files, base) {
		s.Files = append(s.Files, base)
	}
	for i := range g.Trajectories {
		b.addEpisode(s, &g.Trajectories[i])
	}
	b.consider(s, f, g)
}

func (b *trajBuilder) addEpisode(s *TrajStep, t *trajectory.Trajectory) {
	s.Episodes++
	if sm := sampler(t); !slices.Contains(s.Samplers, sm) {
		s.Samplers = append(s.Samplers, sm)
	}
	if t.Error != "" {
		s.Errors++
	}
	if r, ok := finiteReward(t); ok {
		s.Scored++
		s.Rewards = append(s.Rewards, r)
	} else if t.Reward != nil && !math.IsNaN(*t.Reward) {
		b.notFinite++
	}
	for _, c := range t.RewardComponents {
		b.addFinite(meanOf(s.Components, c.Name), c.Value)
	}
	for k, v := range t.Metrics {
		b.addFinite(meanOf(s.EnvMetrics, k), v)
	}
	tokens, chars, ids := completionLength(t)
	if !ids {
		b.allIDs = false
	} else {
		s.tokens.add(float64(tokens))
	}
	s.chars.add(float64(chars))
}

// finiteReward is t's reward when it has one that is a finite number: a
// NaN one is unscored, and an infinite one is left out.
func finiteReward(t *trajectory.Trajectory) (float64, bool) {
	if t.Reward == nil || math.IsNaN(*t.Reward) || math.IsInf(*t.Reward, 0) {
		return 0, false
	}
	return *t.Reward, true
}

// addFinite adds v to m, or counts it as left out when it is not finite.
func (b *trajBuilder) addFinite(m *Mean, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		b.notFinite++
		return
	}
	m.add(v)
}

func meanOf(m map[string]*Mean, k string) *Mean {
	if m[k] == nil {
		m[k] = &Mean{}
	}
	return m[k]
}

// completionLength counts what the policy wrote in t: sampled tokens and
// characters of its turns. ids is false when a policy turn has no token
// ids (a server that did not return them).
func completionLength(t *trajectory.Trajectory) (tokens, chars int, ids bool) {
	ids = true
	for _, m := range t.Messages {
		if m.Role != "assistant" {
			continue
		}
		if len(m.TokenIDs) == 0 {
			ids = false
		}
		tokens += len(m.TokenIDs)
		chars += utf8.RuneCountInString(m.Content) + utf8.RuneCountInString(m.ReasoningContent)
		for _, tc := range m.ToolCalls {
			chars += utf8.RuneCountInString(tc.Name) + utf8.RuneCountInString(tc.Arguments)
		}
	}
	return tokens, chars, ids
}

// consider keeps g as the step's shown rollout when its rewards are spread
// wider than the one kept: the best and the worst of a group with a wide
// spread are what GRPO learns from.
func (b *trajBuilder) consider(s *TrajStep, f TrajFile, g trajectory.Group) {
	best, worst := -1, -1
	var hi, lo float64
	for i := range g.Trajectories {
		r, ok := finiteReward(&g.Trajectories[i])
		if !ok {
			continue
		}
		if best < 0 || r > hi {
			best, hi = i, r
		}
		if worst < 0 || r < lo {
			worst, lo = i, r
		}
	}
	spread := -1.0
	if best >= 0 {
		spread = hi - lo
	} else {
		best = 0 // nothing scored: show the first episode
	}
	if s.Rollout != nil && spread <= s.Rollout.spread {
		return
	}
	first := &g.Trajectories[0]
	ro := &Rollout{GroupID: g.ID, ScenarioID: first.ScenarioID, Env: first.Env, Episodes: len(g.Trajectories), spread: spread}
	ro.Best = shownEpisode(&g.Trajectories[best], f.Path)
	if worst >= 0 && worst != best {
		ro.Worst = shownEpisode(&g.Trajectories[worst], f.Path)
	}
	s.Rollout = ro
}

// shownEpisode copies what the page shows of t, cutting long contents and
// long conversations.
func shownEpisode(t *trajectory.Trajectory, path string) *Episode {
	e := &Episode{ID: t.ID, Sampler: sampler(t), SampledStep: t.Step, File: filepath.Base(path), Error: cut(t.Error),
		Components: slices.Clone(t.RewardComponents)}
	// A traceback or a judge's reasoning can be as long as any message.
	for i := range e.Components {
		e.Components[i].Explanation = cut(e.Components[i].Explanation)
	}
	if t.Reward != nil {
		r := *t.Reward
		e.Reward = &r
	}
	keys := make([]string, 0, len(t.Metrics))
	for k := range t.Metrics {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		e.Metrics = append(e.Metrics, Param{k, num(t.Metrics[k])})
	}
	msgs := t.Messages
	if len(msgs) > maxShownMessages {
		half := maxShownMessages / 2
		e.Omitted, e.OmittedAt = len(msgs)-maxShownMessages, half
		msgs = append(slices.Clone(msgs[:half]), msgs[len(msgs)-half:]...)
	}
	for _, m := range msgs {
		parts := partsNotShown(m.ContentParts)
		m.TokenIDs, m.Logprobs, m.ContentParts = nil, nil, ""
		m.Content = cut(m.Content)
		m.ReasoningContent = cut(m.ReasoningContent)
		more := max(len(m.ToolCalls)-maxShownToolCalls, 0)
		m.ToolCalls = slices.Clone(m.ToolCalls[:len(m.ToolCalls)-more])
		for i := range m.ToolCalls {
			m.ToolCalls[i].Arguments = cut(m.ToolCalls[i].Arguments)
		}
		e.Messages = append(e.Messages, ShownMessage{Message: m, Parts: parts, MoreToolCalls: more})
	}
	return e
}

// partsNotShown counts the content parts of a message that are not text,
// by type: "3 content parts not shown: 2 image_url, 1 input_audio". The
// writer checked the parts (Trajectory.Validate), so a value that does not
// parse has nothing to count.
func partsNotShown(contentParts string) string {
	var parts []struct {
		Type string `json:"type"`
	}
	if contentParts == "" || json.Unmarshal([]byte(contentParts), &parts) != nil {
		return ""
	}
	var types []string
	count := map[string]int{}
	n := 0
	for _, p := range parts {
		if p.Type == "text" {
			continue
		}
		if count[p.Type] == 0 {
			types = append(types, p.Type)
		}
		count[p.Type]++
		n++
	}
	if n == 0 {
		return ""
	}
	what := make([]string, len(types))
	for i, t := range types {
		what[i] = t
		if len(types) > 1 {
			what[i] = fmt.Sprintf("%d %s", count[t], t)
		}
	}
	noun := "content part"
	if n > 1 {
		noun += "s"
	}
	return cut(fmt.Sprintf("%d %s not shown: %s", n, noun, strings.Join(what, ", ")))
}

// cut shortens s to maxShownRunes, saying how much was left out.
func cut(s string) string {
	if utf8.RuneCountInString(s) <= maxShownRunes {
		return s
	}
	r := []rune(s)
	return string(r[:maxShownRunes]) + fmt.Sprintf(" … (%d more characters)", len(r)-maxShownRunes)
}

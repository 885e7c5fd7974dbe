package trajectory

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/hone-rl/hone/format/runfolder"
)

// RewardSummary describes the rewards of a set of trajectories. Unscored
// rewards (null, or NaN, which hone-train skips as unscored too) are
// counted, not averaged. An infinite reward is averaged: the figures it
// makes infinite (or NaN, with +Inf and -Inf both present) are written to
// JSON as the strings "+Inf", "-Inf" and "NaN", since JSON has no such
// numbers.
type RewardSummary struct {
	Scored   int64   `json:"scored"`   // trajectories with a reward
	Unscored int64   `json:"unscored"` // trajectories whose reward is null or NaN
	Mean     float64 `json:"mean"`     // over scored trajectories; 0 when none
	// Std is the sample standard deviation (n-1 denominator, like SQL's
	// stddev_samp); 0 when fewer than two are scored.
	Std float64 `json:"std"`
	Min float64 `json:"min"` // 0 when none are scored
	Max float64 `json:"max"` // 0 when none are scored
}

// rewardSummaryJSON is RewardSummary as JSON holds it: its figures are
// jsonFloats, as a JSONL line's reward is.
type rewardSummaryJSON struct {
	Scored   int64     `json:"scored"`
	Unscored int64     `json:"unscored"`
	Mean     jsonFloat `json:"mean"`
	Std      jsonFloat `json:"std"`
	Min      jsonFloat `json:"min"`
	Max      jsonFloat `json:"max"`
}

// MarshalJSON writes s, its figures that are not finite as strings.
func (s RewardSummary) MarshalJSON() ([]byte, error) {
	return json.Marshal(rewardSummaryJSON{s.Scored, s.Unscored, jsonFloat(s.Mean), jsonFloat(s.Std), jsonFloat(s.Min), jsonFloat(s.Max)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *RewardSummary) UnmarshalJSON(b []byte) error {
	var j rewardSummaryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = RewardSummary{j.Scored, j.Unscored, float64(j.Mean), float64(j.Std), float64(j.Min), float64(j.Max)}
	return nil
}

// Summary counts one slice of an input set.
type Summary struct {
	Groups       int64 `json:"groups"`
	Trajectories int64 `json:"trajectories"`
	Errors       int64 `json:"errors"` // trajectories with a non-empty Error
	// Tokens are the sampled token ids recorded on assistant turns, of the
	// main history and every additional history.
	Tokens int64         `json:"tokens"`
	Reward RewardSummary `json:"reward"`
}

// StepSummary is the Summary of the trajectories produced at one step
// number, whatever served it: two runs' step 1 are one StepSummary.
type StepSummary struct {
	Step int64 `json:"step"`
	Summary
}

// AdapterSummary is the Summary of the trajectories that one adapter (or
// base model) served: their Adapter and Step. Adapter is "" for rows no
// turn of which names a model (a scripted policy, rows imported without
// it).
type AdapterSummary struct {
	Adapter string `json:"adapter"`
	Step    int64  `json:"step"`
	Summary
}

// EnvSummary is the Summary of one environment's trajectories.
type EnvSummary struct {
	Env string `json:"env"`
	Summary
}

// Stats summarizes an input set: totals, and the same per step number, per
// adapter and step that served the trajectories, and per environment. A
// group counts once in every step, adapter and environment its
// trajectories belong to.
//
// ByAdapter tells runs apart, where ByStep adds up the steps of the same
// number: a warm-up's "warmup@12" and "rl@12" are one step 12 there. It
// is sorted by run (the part of "<run>@<N>" before the "@", or the whole
// name of a base model, "" first), then by step (the one in the name,
// where it has one), then by the rows' step, then by name, so that a run's
// steps follow each other in order (rl@2 before rl@10, and before rl@10's
// rows of step 0). ByStep is sorted by step, ByEnv by name.
type Stats struct {
	Files []FileInfo `json:"files"`
	Summary
	// Messages and TrainableTurns count every history's messages, the
	// main one and the additional ones.
	Messages       int64 `json:"messages"`
	TrainableTurns int64 `json:"trainable_turns"`
	// AdditionalHistories counts the trajectories' additional histories
	// (schema version 2), each trained as a sequence of its own.
	AdditionalHistories int64            `json:"additional_histories"`
	ByStep              []StepSummary    `json:"by_step"`
	ByAdapter           []AdapterSummary `json:"by_adapter"`
	ByEnv               []EnvSummary     `json:"by_env"`
}

// StatsBuilder accumulates Stats group by group. The zero value is ready.
type StatsBuilder struct {
	total          acc
	messages       int64
	trainableTurns int64
	additional     int64
	steps          map[int64]*acc
	served         map[servedKey]*acc
	envs           map[string]*acc
}

// servedKey is what served a trajectory: its Adapter and Step.
type servedKey struct {
	adapter string
	step    int64
}

// acc accumulates a Summary; the finite rewards with Welford's update, so
// the mean and variance stay accurate over millions of rows, and the
// infinite ones counted apart: in the update one -Inf turned the mean NaN
// at the next finite reward (Inf - -Inf), where their mean is -Inf.
//
// The update runs on the rewards scaled by 2^-exp, exp the exponent of the
// largest magnitude so far, so each scaled reward is within [-1, 1]: the
// squared deviations of rewards near 1e308 overflowed to +Inf, and those
// of rewards near 1e-300 underflowed to 0. A power of two scales exactly.
type acc struct {
	groups, trajectories, errors, tokens int64
	n, unscored                          int64
	finite, posInf, negInf               int64
	mean, m2, min, max                   float64 // mean and m2 scaled by 2^-exp and 2^-2exp
	exp                                  int
}

func (a *acc) add(t *Trajectory) {
	a.trajectories++
	if t.Error != "" {
		a.errors++
	}
	a.tokens += TrajectoryTokens(t)
	if t.Reward == nil || math.IsNaN(*t.Reward) {
		a.unscored++
		return
	}
	x := *t.Reward
	a.n++
	if a.n == 1 {
		a.min, a.max = x, x
	} else {
		a.min, a.max = math.Min(a.min, x), math.Max(a.max, x)
	}
	switch {
	case math.IsInf(x, 1):
		a.posInf++
		return
	case math.IsInf(x, -1):
		a.negInf++
		return
	}
	a.finite++
	// Rescale what is summed so far to a larger exponent, or to any while
	// every reward so far is 0 (the exponent then means nothing yet).
	if _, e := math.Frexp(x); x != 0 && (e > a.exp || (a.mean == 0 && a.m2 == 0)) {
		a.mean = math.Ldexp(a.mean, a.exp-e)
		a.m2 = math.Ldexp(a.m2, 2*(a.exp-e))
		a.exp = e
	}
	y := math.Ldexp(x, -a.exp)
	d := y - a.mean
	a.mean += d / float64(a.finite)
	a.m2 += d * (y - a.mean)
}

// rewardMean is the mean of the scored rewards, infinite ones included.
func (a *acc) rewardMean() float64 {
	switch {
	case a.posInf > 0 && a.negInf > 0:
		return math.NaN()
	case a.posInf > 0:
		return math.Inf(1)
	case a.negInf > 0:
		return math.Inf(-1)
	}
	return math.Ldexp(a.mean, a.exp)
}

func (a *acc) summary() Summary {
	s := Summary{Groups: a.groups, Trajectories: a.trajectories, Errors: a.errors, Tokens: a.tokens,
		Reward: RewardSummary{Scored: a.n, Unscored: a.unscored}}
	if a.n > 0 {
		s.Reward.Mean, s.Reward.Min, s.Reward.Max = a.rewardMean(), a.min, a.max
	}
	switch {
	case a.n > 1 && a.posInf+a.negInf > 0:
		s.Reward.Std = math.NaN() // an infinite reward's deviation is Inf - Inf
	case a.n > 1:
		s.Reward.Std = math.Ldexp(math.Sqrt(a.m2/float64(a.n-1)), a.exp)
	}
	return s
}

// Add counts one group.
func (b *StatsBuilder) Add(g Group) {
	if b.steps == nil {
		b.steps = make(map[int64]*acc)
		b.served = make(map[servedKey]*acc)
		b.envs = make(map[string]*acc)
	}
	b.total.groups++
	stepSeen := map[int64]bool{}
	servedSeen := map[servedKey]bool{}
	envSeen := map[string]bool{}
	for i := range g.Trajectories {
		t := &g.Trajectories[i]
		b.total.add(t)
		b.additional += int64(len(t.AdditionalHistories))
		b.countMessages(t.Messages)
		for j := range t.AdditionalHistories {
			b.countMessages(t.AdditionalHistories[j].Messages)
		}
		addTo(b.steps, stepSeen, t.Step, t)
		addTo(b.served, servedSeen, servedKey{t.Adapter, t.Step}, t)
		addTo(b.envs, envSeen, t.Env, t)
	}
}

// addTo counts t in the slice k of accs, and its group there once: seen
// holds the slices the group has been counted in.
func addTo[K comparable](accs map[K]*acc, seen map[K]bool, k K, t *Trajectory) {
	a := accs[k]
	if a == nil {
		a = &acc{}
		accs[k] = a
	}
	a.add(t)
	if !seen[k] {
		seen[k] = true
		a.groups++
	}
}

func (b *StatsBuilder) countMessages(ms []Message) {
	b.messages += int64(len(ms))
	for j := range ms {
		if ms[j].Trainable {
			b.trainableTurns++
		}
	}
}

// TrajectoryTokens counts the sampled token ids recorded in t: on the
// assistant turns of its main history and of every additional history.
func TrajectoryTokens(t *Trajectory) int64 {
	n := messageTokens(t.Messages)
	for i := range t.AdditionalHistories {
		n += messageTokens(t.AdditionalHistories[i].Messages)
	}
	return n
}

func messageTokens(ms []Message) int64 {
	var n int64
	for i := range ms {
		n += int64(len(ms[i].TokenIDs))
	}
	return n
}

// Stats returns what has been added so far.
func (b *StatsBuilder) Stats() Stats {
	s := Stats{Summary: b.total.summary(), Messages: b.messages, TrainableTurns: b.trainableTurns,
		AdditionalHistories: b.additional}
	for step, a := range b.steps {
		s.ByStep = append(s.ByStep, StepSummary{Step: step, Summary: a.summary()})
	}
	slices.SortFunc(s.ByStep, func(x, y StepSummary) int { return cmp.Compare(x.Step, y.Step) })
	for k, a := range b.served {
		s.ByAdapter = append(s.ByAdapter, AdapterSummary{Adapter: k.adapter, Step: k.step, Summary: a.summary()})
	}
	slices.SortFunc(s.ByAdapter, func(x, y AdapterSummary) int {
		xr, xs := servedOrder(x)
		yr, ys := servedOrder(y)
		return cmp.Or(strings.Compare(xr, yr), cmp.Compare(xs, ys),
			cmp.Compare(x.Step, y.Step), strings.Compare(x.Adapter, y.Adapter))
	})
	for env, a := range b.envs {
		s.ByEnv = append(s.ByEnv, EnvSummary{Env: env, Summary: a.summary()})
	}
	slices.SortFunc(s.ByEnv, func(x, y EnvSummary) int { return strings.Compare(x.Env, y.Env) })
	return s
}

// servedOrder is what ByAdapter sorts by first: the run and step of a
// served name "<run>@<N>", or the whole name and the rows' step where it
// is not one (a base model's served name, ""). The step in the name, not
// the rows' own, places rows whose step disagrees with it (imported with
// step 0) among their run's other steps.
func servedOrder(a AdapterSummary) (run string, step int64) {
	if sv, err := runfolder.ParseServed(a.Adapter); err == nil && sv.HasStep {
		return sv.Run, int64(sv.Step)
	}
	return a.Adapter, a.Step
}

// ComputeStats reads r to the end and summarizes it.
func ComputeStats(ctx context.Context, r *Reader) (Stats, error) {
	var b StatsBuilder
	for {
		g, err := r.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return Stats{}, err
		}
		b.Add(g)
	}
	s := b.Stats()
	s.Files = r.Files()
	return s, nil
}

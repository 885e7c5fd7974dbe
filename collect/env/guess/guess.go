// Package guess is guess-the-number: the environment picks a secret in
// 1..N, the agent guesses, the user answers "higher" or "lower" and states
// the range still open. The text is kept minimal ("range 1-32" / "17") so a
// tiny byte-level model can learn it.
//
// Reward: 1 + 0.2·(K−t)/K when the secret is found on turn t of K; 0 when
// the turns run out; −1 (and the episode stops) when a reply is not a
// number. A guess outside the open range wastes the turn and is counted in
// the metric out_of_range.
package guess

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/format/trajectory"
)

// Env is the guess-the-number environment.
type Env struct {
	N     int // secrets are in 1..N
	Turns int // guesses allowed
}

// New returns the environment with defaults N=32, K=5 for zero values.
func New(n, turns int) *Env {
	if n <= 0 {
		n = 32
	}
	if turns <= 0 {
		turns = 5
	}
	return &Env{N: n, Turns: turns}
}

// Payload is a scenario's payload.
type Payload struct {
	Secret int `json:"secret"`
	N      int `json:"n"`
	Turns  int `json:"turns"`
}

// Name implements env.Env.
func (e *Env) Name() string { return "guess" }

// RewardRange implements env.Env.
func (e *Env) RewardRange() (float64, float64) { return -1, 1.2 }

// Scenarios implements env.Env: secrets drawn uniformly from 1..N.
func (e *Env) Scenarios(_ context.Context, seed int64, n int) ([]env.Scenario, error) {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x67756573))
	out := make([]env.Scenario, n)
	for i := range out {
		p, _ := json.Marshal(Payload{Secret: 1 + rng.IntN(e.N), N: e.N, Turns: e.Turns})
		out[i] = env.Scenario{ID: fmt.Sprintf("guess-%d-%d", seed, i), Env: "guess", Payload: p, Split: trajectory.SplitTrain}
	}
	return out, nil
}

// Overrides implements env.StoredSettings: the payload's n and turns are
// played over e's, read as NewEpisode reads them (missing or
// non-positive is e's).
func (e *Env) Overrides(sc env.Scenario) []env.Override {
	var p Payload
	if len(sc.Payload) == 0 || json.Unmarshal(sc.Payload, &p) != nil {
		return nil
	}
	var out []env.Override
	if p.N > 0 && p.N != e.N {
		out = append(out, env.Override{Key: "n", Env: strconv.Itoa(e.N), Stored: strconv.Itoa(p.N)})
	}
	if p.Turns > 0 && p.Turns != e.Turns {
		out = append(out, env.Override{Key: "turns", Env: strconv.Itoa(e.Turns), Stored: strconv.Itoa(p.Turns)})
	}
	return out
}

// NewEpisode implements env.Env.
func (e *Env) NewEpisode(_ context.Context, sc env.Scenario, _ int64) (env.Episode, error) {
	p := Payload{N: e.N, Turns: e.Turns}
	if len(sc.Payload) > 0 {
		if err := json.Unmarshal(sc.Payload, &p); err != nil {
			return nil, fmt.Errorf("guess: scenario %s: payload: %w", sc.ID, err)
		}
	}
	if p.N <= 0 {
		p.N = e.N
	}
	if p.Turns <= 0 {
		p.Turns = e.Turns
	}
	if p.Secret < 1 || p.Secret > p.N {
		return nil, fmt.Errorf("guess: scenario %s: secret %d outside 1..%d", sc.ID, p.Secret, p.N)
	}
	return &episode{p: p, lo: 1, hi: p.N}, nil
}

type episode struct {
	p          Payload
	lo, hi     int
	turns      int
	found      bool
	invalid    bool
	outOfRange int
}

func rangeText(lo, hi int) string { return fmt.Sprintf("range %d-%d", lo, hi) }

func (ep *episode) Reset(context.Context) (env.Observation, error) {
	return env.Observation{Messages: []trajectory.Message{env.User(rangeText(ep.lo, ep.hi))}}, nil
}

func (ep *episode) Step(_ context.Context, turn env.Turn) (env.Feedback, error) {
	ep.turns++
	g, err := strconv.Atoi(strings.TrimSpace(turn.Message.Content))
	if err != nil || len(turn.Message.ToolCalls) > 0 {
		ep.invalid = true
		return env.Feedback{Done: true}, nil
	}
	var fb string
	switch {
	case g < ep.lo || g > ep.hi:
		ep.outOfRange++
		fb = "out of range"
	case g == ep.p.Secret:
		ep.found = true
		return env.Feedback{Done: true}, nil
	case g < ep.p.Secret:
		ep.lo = g + 1
		fb = "higher"
	default:
		ep.hi = g - 1
		fb = "lower"
	}
	if ep.turns >= ep.p.Turns {
		return env.Feedback{Done: true}, nil
	}
	return env.Feedback{Messages: []trajectory.Message{env.User(fb + ", " + rangeText(ep.lo, ep.hi))}}, nil
}

func (ep *episode) Outcome() env.Outcome {
	r := 0.0
	switch {
	case ep.invalid:
		r = -1
	case ep.found:
		r = 1 + 0.2*float64(ep.p.Turns-ep.turns)/float64(ep.p.Turns)
	}
	return env.Outcome{Reward: r, Metrics: map[string]float64{
		"found": b2f(ep.found), "invalid": b2f(ep.invalid), "turns": float64(ep.turns),
		"out_of_range": float64(ep.outOfRange),
	}}
}

func (ep *episode) Close() error { return nil }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Policies implements env.Scripted: "random-in-range" guesses uniformly in
// the open range (weak but feedback-respecting), "bisect" takes the middle,
// "mix" plays bisect in 30% of episodes and random-in-range otherwise.
func (e *Env) Policies() []string { return []string{"bisect", "random-in-range", "mix"} }

// Policy implements env.Scripted.
func (e *Env) Policy(name string, seed int64) (env.Policy, error) {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x706f6c))
	bisect := false
	switch name {
	case "bisect":
		bisect = true
	case "random-in-range":
	case "mix":
		bisect = rng.Float64() < 0.3
	default:
		return nil, fmt.Errorf("guess: %w %q (have %v)", env.ErrUnknownPolicy, name, e.Policies())
	}
	return env.PolicyFunc(func(_ context.Context, msgs []trajectory.Message, _ []trajectory.Tool) (trajectory.Message, error) {
		lo, hi, err := ParseRange(env.LastUser(msgs))
		if err != nil {
			return trajectory.Message{}, err
		}
		g := (lo + hi) / 2
		if !bisect {
			g = lo + rng.IntN(hi-lo+1)
		}
		return env.Assistant(strconv.Itoa(g)), nil
	}), nil
}

// ParseRange reads "range LO-HI" at the end of a user message.
func ParseRange(s string) (lo, hi int, err error) {
	i := strings.LastIndex(s, "range ")
	if i < 0 {
		return 0, 0, fmt.Errorf("guess: no range in %q", s)
	}
	a, b, ok := strings.Cut(strings.TrimSpace(s[i+len("range "):]), "-")
	if !ok {
		return 0, 0, fmt.Errorf("guess: no range in %q", s)
	}
	if lo, err = strconv.Atoi(a); err == nil {
		hi, err = strconv.Atoi(b)
	}
	if err != nil || lo > hi {
		return 0, 0, fmt.Errorf("guess: bad range in %q", s)
	}
	return lo, hi, nil
}

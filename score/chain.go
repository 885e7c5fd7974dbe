package score

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/score/judge"
	"github.com/hone-rl/hone/score/ruler"
)

// Spec is one parsed --scorer value: [NAME=]KIND[:ARG].
type Spec struct {
	Name string // component name; defaults to Kind
	Kind string // env, formula, ruler
	Arg  string // formula expression
}

func (s Spec) String() string {
	var b strings.Builder
	if s.Name != s.Kind {
		b.WriteString(s.Name + "=")
	}
	b.WriteString(s.Kind)
	if s.Arg != "" {
		b.WriteString(":" + s.Arg)
	}
	return b.String()
}

var nameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

// ParseSpec parses one --scorer value.
func ParseSpec(v string) (Spec, error) {
	head, arg, hasArg := strings.Cut(v, ":")
	name, kind, named := strings.Cut(head, "=")
	if !named {
		kind, name = head, head
	}
	kind = strings.TrimSpace(kind)
	name = strings.TrimSpace(name)
	s := Spec{Name: name, Kind: kind, Arg: strings.TrimSpace(arg)}
	switch kind {
	case "env":
		if hasArg {
			return s, stageerr.Usagef("--scorer %q: env takes no argument", v)
		}
		if named && name != ComponentEnv {
			return s, stageerr.Usagef("--scorer %q: the env scorer's component is always named %q", v, ComponentEnv)
		}
	case "formula":
		if s.Arg == "" {
			return s, stageerr.Usagef("--scorer %q: formula needs an expression, e.g. --scorer 'formula:win - 0.1*illegal'", v)
		}
	case "ruler":
		if hasArg {
			return s, stageerr.Usagef("--scorer %q: ruler takes no argument (use --rubric FILE, --judge-model)", v)
		}
	default:
		return s, stageerr.Usagef("--scorer %q: unknown scorer %q (want env, formula:EXPR or ruler, optionally NAME=...)", v, kind)
	}
	if !nameRE.MatchString(name) {
		return s, stageerr.Usagef("--scorer %q: component name %q is not a name (letters, digits, _ . -)", v, name)
	}
	if name == "reward" {
		// A formula's bare reward is the row's reward so far, which the
		// environment filled before any component existed: a component of
		// that name was hidden from every later formula (one reading
		// reward got the last scorer's value, not this one's), as a
		// metric of the name always is.
		return s, stageerr.Usagef("--scorer %q: component name \"reward\" is taken by the reward so far in the chain, which a formula's bare reward reads: a later formula reading reward would get the last scorer's value, not this one's (a metric named reward is metrics[\"reward\"]); give the component another name, e.g. score=%s", v, s.Kind+argSuffix(s.Arg))
	}
	if kind != "env" && (name == ComponentEnv || name == ComponentPrevious) {
		return s, stageerr.Usagef("--scorer %q: component name %q is reserved", v, name)
	}
	return s, nil
}

// argSuffix is ":ARG", or "" for a kind without an argument.
func argSuffix(arg string) string {
	if arg == "" {
		return ""
	}
	return ":" + arg
}

// OnJudgeError policies.
const (
	PolicyFail = "fail"
	PolicySkip = "skip"
	PolicyMark = "mark"
)

// Chain applies scorers in order to a group.
type Chain struct {
	Scorers     []Scorer
	Spec        string // recorded under MetaChain
	OnJudgeErr  string // PolicyFail, PolicySkip or PolicyMark
	OnlyMissing bool
	JudgeModel  string // the ruler scorers' judge model, for errors
	// Log gets one warning per group that skip or mark passes over, with
	// the judge's reason: the summary only counts them, and a skipped
	// group's rows are not written anywhere else. Nil: discard.
	Log *slog.Logger
	// JudgeAnswered reports whether the judge has answered a call in this
	// run (nil: never). Until it has, a 401/403/404, or an answer that is
	// not JSON, stops the run.
	JudgeAnswered func() bool
	// JudgeServed lists the models the judge's server serves, for that
	// stop on a 404 (nil, or "": none to name).
	JudgeServed func(ctx context.Context) string

	// The groups --only-missing passed through that another chain scored
	// (PassedOther), for one warning a run.
	mu                    sync.Mutex
	passedOther           int64
	otherGroup, otherSpec string
}

// Outcome says what happened to a group.
type Outcome int

const (
	Scored  Outcome = iota // written with new scores
	Passed                 // written untouched (--only-missing, nothing missing)
	Skipped                // dropped after a judge failure (--on-judge-error skip)
	Marked                 // written unscored, rows marked (--on-judge-error mark)
	Errored                // written untouched: every row's episode failed in collection
)

// isJudgeFailure reports whether err falls under --on-judge-error.
func isJudgeFailure(err error) bool {
	return errors.Is(err, judge.ErrFailed) || errors.Is(err, ruler.ErrPromptTooLong)
}

// complete reports whether every row of g already has a reward and every
// component the chain writes, and no mark from an earlier failed run.
// Rows whose episode failed are never scored, so they do not count.
func (c *Chain) complete(g *trajectory.Group) bool {
	for i := range g.Trajectories {
		t := &g.Trajectories[i]
		if EpisodeFailed(t) {
			continue
		}
		if t.Reward == nil || hasMark(t) {
			return false
		}
		for _, s := range c.Scorers {
			if _, ok := component(t, s.Name()); !ok {
				return false
			}
		}
	}
	return true
}

// notePassed counts a group passed through whose rows another chain
// scored: they keep its values under this chain's names (a changed
// formula is not applied), while the output's footer names this chain.
// The pipeline calls it as it writes the groups, in input order: called
// by Apply, as the workers finished, the group PassedOther names was
// any of the first few of the input (the last started, with
// --concurrency above 1), not the first.
func (c *Chain) notePassed(g *trajectory.Group) {
	for i := range g.Trajectories {
		t := &g.Trajectories[i]
		// A row without the key got its components elsewhere (an
		// import): no chain of hone-score's to name.
		if spec, ok := t.Metadata[MetaChain]; ok && !EpisodeFailed(t) && spec != c.Spec {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.passedOther++; c.passedOther == 1 {
				c.otherGroup, c.otherSpec = g.ID, spec
			}
			return
		}
	}
}

// PassedOther returns how many groups --only-missing passed through that
// another chain had scored, and the first of them with its chain.
func (c *Chain) PassedOther() (n int64, group, spec string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.passedOther, c.otherGroup, c.otherSpec
}

// Apply scores g. It returns the group to write (unless the outcome is
// Skipped) and, for failures that stop the run, an error.
//
// Rows whose episode failed in collection (EpisodeFailed) are not scored:
// the scorers see the group without them, as hone-train does, and they are
// written as they were read, reward and all. A group with no other row is
// written untouched, as Errored.
func (c *Chain) Apply(ctx context.Context, g trajectory.Group) (trajectory.Group, Outcome, error) {
	var live []int // rows to score
	for i := range g.Trajectories {
		if !EpisodeFailed(&g.Trajectories[i]) {
			live = append(live, i)
		}
	}
	if len(live) == 0 && len(g.Trajectories) > 0 {
		return g, Errored, nil
	}
	if c.OnlyMissing && c.complete(&g) {
		return g, Passed, nil
	}
	work := cloneGroup(g)
	// The group's own fields go with its rows: a formula reads its
	// metrics and metadata (group_metrics["name"], group_metadata["key"]).
	sub := trajectory.Group{ID: g.ID, Trajectories: make([]trajectory.Trajectory, len(live)), Metadata: work.Metadata, Metrics: work.Metrics}
	for k, i := range live {
		sub.Trajectories[k] = work.Trajectories[i]
	}
	failed := len(g.Trajectories) - len(live)
	before, err := c.score(ctx, &sub)
	if err != nil {
		if ctx.Err() != nil {
			return g, Skipped, ctx.Err()
		}
		if failed > 0 {
			err = fmt.Errorf("%w (%d of the group's %d rows failed in collection and are not scored)", err, failed, len(g.Trajectories))
		}
		return c.onError(ctx, g, live, err)
	}
	for k := range sub.Trajectories {
		t := &sub.Trajectories[k]
		_, scoredBefore := t.Metadata[MetaChain]
		if scoredBefore && before[k] != nil && (t.Reward == nil || *t.Reward != *before[k]) {
			setComponent(t, trajectory.RewardComponent{Name: ComponentPrevious, Value: *before[k],
				Explanation: fmt.Sprintf("reward before re-scoring (was scored by %s)", t.Metadata[MetaChain])})
		}
		if t.Metadata == nil {
			t.Metadata = map[string]string{}
		}
		t.Metadata[MetaChain] = c.Spec
		clearMark(t)
		work.Trajectories[live[k]] = *t
	}
	return work, Scored, nil
}

// score runs the scorers over g in place: each row gets every scorer's
// component and the last one's value as its reward. It returns the
// rewards the rows had before.
func (c *Chain) score(ctx context.Context, g *trajectory.Group) ([]*float64, error) {
	before := make([]*float64, len(g.Trajectories))
	for i := range g.Trajectories {
		t := &g.Trajectories[i]
		before[i] = t.Reward
		_, scoredBefore := t.Metadata[MetaChain]
		if _, ok := component(t, ComponentEnv); !ok && t.Reward != nil && !scoredBefore {
			t.RewardComponents = append(t.RewardComponents, trajectory.RewardComponent{
				Name: ComponentEnv, Value: *t.Reward, Explanation: "reward reported by the environment"})
		}
		// The reward so far, which a first formula reads as reward, is
		// the environment's on every run: on a row scored before, the
		// row's reward is the earlier run's (what the chain writes as
		// previous), and reward*2 doubled on each re-scoring. The env
		// scorer reads the env component itself, and says by the row's
		// own reward why one is missing.
		if scoredBefore && len(c.Scorers) > 0 && !isEnv(c.Scorers[0]) {
			t.Reward = nil
			if env, ok := component(t, ComponentEnv); ok {
				t.Reward = trajectory.Float64(env.Value)
			}
		}
	}
	for _, s := range c.Scorers {
		comps, err := s.ScoreGroup(ctx, g)
		if err == nil && len(comps) != len(g.Trajectories) {
			err = fmt.Errorf("scorer %s returned %d components for %d trajectories", s.Name(), len(comps), len(g.Trajectories))
		}
		if err != nil {
			return nil, &scorerError{s.Name(), err}
		}
		for i := range g.Trajectories {
			t := &g.Trajectories[i]
			comps[i].Name = s.Name()
			setComponent(t, comps[i])
			t.Reward = trajectory.Float64(comps[i].Value)
		}
	}
	return before, nil
}

// isEnv reports whether s is the env scorer.
func isEnv(s Scorer) bool {
	_, ok := s.(EnvScorer)
	return ok
}

// scorerError is a scorer's failure, named.
type scorerError struct {
	scorer string
	err    error
}

func (e *scorerError) Error() string { return "scorer " + e.scorer + ": " + e.err.Error() }
func (e *scorerError) Unwrap() error { return e.err }

// onError applies --on-judge-error to a judge failure; any other failure
// is bad input (env and formula fail only on what the rows hold). Marks go
// on the rows that were to be scored (live), not on failed episodes.
func (c *Chain) onError(ctx context.Context, g trajectory.Group, live []int, err error) (trajectory.Group, Outcome, error) {
	if !isJudgeFailure(err) {
		return g, Skipped, stageerr.BadInput(err)
	}
	// A refused key or an unknown model fails every group alike: under
	// skip or mark the run asked the judge once per group for nothing and
	// wrote a file with nothing scored. Once the judge has answered, a
	// refusal is the server's passing state (a vLLM restarted behind
	// hone-serve's front answers 404 until its adapter is loaded again),
	// and the policy decides, as for any other failure.
	if status, ok := judge.Refused(err); ok && (c.JudgeAnswered == nil || !c.JudgeAnswered()) {
		fix := "check --judge-model and --judge-base-url"
		switch {
		case status != http.StatusNotFound:
			fix = "check the API key ($OPENAI_API_KEY or --judge-api-key) and --judge-base-url"
		case c.JudgeServed != nil:
			// The names the user may have meant, as hone-collect gives
			// them for --model.
			if served := c.JudgeServed(ctx); served != "" {
				fix += "; the server serves: " + served
			} else {
				// No list either: most likely no OpenAI API at that URL,
				// as a base URL without its /v1 has none.
				fix += "; the server lists no models there: an OpenAI base URL usually ends in /v1"
			}
		}
		return g, Skipped, fmt.Errorf("judge model %q answered HTTP %d, as it will for every group: stopping under any --on-judge-error (%s): %w",
			c.JudgeModel, status, fix, err)
	}
	if judge.NotCompletion(err) && (c.JudgeAnswered == nil || !c.JudgeAnswered()) {
		// A web page at the judge's URL is served to every group alike,
		// as a refusal is; the error says what to check.
		return g, Skipped, fmt.Errorf("stopping under any --on-judge-error, as every group would get the same: %w", err)
	}
	switch c.OnJudgeErr {
	case PolicySkip:
		c.warnPassed(g, err)
		return g, Skipped, nil
	case PolicyMark:
		c.warnPassed(g, err)
		marked := cloneGroup(g)
		for _, i := range live {
			markError(&marked.Trajectories[i], err.Error())
		}
		return marked, Marked, nil
	}
	return g, Skipped, fmt.Errorf("%w (--on-judge-error fail; use skip or mark to go on without this group)", err)
}

// warnPassed logs a group that --on-judge-error skip or mark passes over,
// naming it and why.
func (c *Chain) warnPassed(g trajectory.Group, err error) {
	if c.Log == nil {
		return
	}
	what := "dropped from the output"
	if c.OnJudgeErr == PolicyMark {
		what = "written unscored, the reason in each judged row's error"
	}
	c.Log.Warn("judge failed for a group: "+what+" (--on-judge-error "+c.OnJudgeErr+")",
		"group", g.ID, "rows", len(g.Trajectories), "error", err)
}

// cloneGroup copies the parts of a group that scoring modifies.
func cloneGroup(g trajectory.Group) trajectory.Group {
	out := trajectory.Group{ID: g.ID, Trajectories: slices.Clone(g.Trajectories),
		Metadata: maps.Clone(g.Metadata), Metrics: maps.Clone(g.Metrics)}
	for i := range out.Trajectories {
		t := &out.Trajectories[i]
		t.RewardComponents = slices.Clone(t.RewardComponents)
		t.Metadata = maps.Clone(t.Metadata)
		if t.Reward != nil {
			t.Reward = trajectory.Float64(*t.Reward)
		}
	}
	return out
}

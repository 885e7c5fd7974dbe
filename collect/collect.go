package collect

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"maps"
	"math"
	"math/big"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/shard"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/format/urlmask"
	"github.com/hone-rl/hone/internal/flagval"
	"github.com/hone-rl/hone/internal/stageerr"
)

// Failures of a run whose output is still whole: the finished groups are
// written, failed episodes as rows with their error. Both are failures of
// the run (exit code 1); the caller decides whether to keep the output. Run
// marks its other errors with internal/stageerr's kinds: bad options are
// stageerr.ErrUsage, a bad scenario file stageerr.ErrBadInput, a stop
// stageerr.ErrInterrupted.
var (
	ErrTooManyFailures = errors.New("too many failed episodes")
	ErrAllFailed       = errors.New("every episode failed")
)

// ErrModelNotFound is the failure of a run stopped at the first model call
// answered 404 (model_not_found, or a base URL without that endpoint)
// before any call was answered: every other episode would fail the same
// way. Once the model answered, a 404 fails its episode only. Its output holds only
// what finished before, so the caller keeps none.
var ErrModelNotFound = errors.New("model not found")

// ErrMaxTokensOverCap is the failure of a run stopped at the first model
// call refused (400) for a --max-tokens over a cap of the server's (its
// own cap on max_tokens, or the model's context, which it alone fills)
// before any call was answered: every other call asks for as many and
// would be refused the same way. Its output holds nothing, so the caller
// keeps none. The run's error matches it but says the limit itself (the
// server's cap, or the model's context) in place of its text.
var ErrMaxTokensOverCap = errors.New("--max-tokens over the server's cap")

// ErrUnreachable is the failure of a run stopped, with no --max-failures
// given, once its first group finished with every episode failing to
// connect to the model server (connection refused, or its host name did
// not resolve), none succeeded and no model call was answered: each later episode would spend its retries
// the same way. Its output
// holds only failed rows, so the caller keeps none.
var ErrUnreachable = errors.New("model server unreachable")

// Options configures a collection run.
type Options struct {
	Env         string            // environment for scenarios that name none (and for generated ones)
	EnvOpts     map[string]string // environment settings (--env-opt key=value)
	Scenarios   string            // JSONL or Parquet scenario file; "" generates them
	Split       string            // only this split of scenarios that carry one, the label of the games' ("": all; train)
	Groups      int               // scenarios to use (0: all of the file)
	GroupSize   int               // attempts per scenario
	Concurrency int               // episodes in flight
	MaxTurns    int               // assistant turns per episode (0: the environment decides)
	Timeout     time.Duration     // per episode (0: none)
	// StartTimeout bounds the start of each environment (0:
	// DefaultStartTimeout): a program or server that never answers fails
	// the run instead of hanging it.
	StartTimeout time.Duration
	Seed         int64
	Run          string // run name recorded in every row
	Policy       string // "model" or "scripted[:NAME]"
	MaxFailures  string // a count ("10") or a fraction of episodes ("0.1"); "" = stop early only for ErrUnreachable
	// idTag tells the scenarios of a --scenarios file (scenariosTag), or the
	// environment that generated them (envTag), apart in group ids (groupID);
	// loadScenarios sets it.
	idTag string

	Model    ModelOptions
	flags    *pflag.FlagSet // AddFlags's: which flags were given (nil: none, options set in code)
	tempFlag *float64       // NaN: not set
	topPFlag *float64
	// TemplateKwargs is --chat-template-kwargs as given, a JSON object;
	// prepare parses it into Model.TemplateKwargs and templateKwargs, its
	// canonical text that every row records.
	TemplateKwargs string
	templateKwargs string

	// Set by the caller, not by flags.
	Shard    shard.Shard  // the part of the scenarios this run plays (hone-collect --shard); zero: all
	Out      io.Writer    // Parquet output
	Log      *slog.Logger // nil: discard
	Progress func(Stats)  // called once the scenarios are loaded (Total set), then after each finished group
	// NewEnv opens an environment by name (nil: NewEnv); it must stop
	// when ctx ends.
	NewEnv func(ctx context.Context, name string, opts map[string]string) (env.Env, error)
	// Summary, if set, is called once as Run returns, whatever the error,
	// with the counts of the rows written (Total is 0 when the run stopped
	// before its scenarios were known).
	Summary func(Stats)
}

// AddFlags registers the options on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.flags = fs
	fs.StringVar(&o.Env, "env", "", "environment: "+strings.Join(EnvNames(), ", ")+" (scenario files may name their own)")
	fs.Var(&envOpts{m: &o.EnvOpts}, "env-opt", "environment setting `KEY=VALUE` (repeatable), e.g. n=64, opponent=minimax, cmd='python3 env.py', url=http://...; an unknown KEY is refused with the environment's valid keys")
	fs.StringVar(&o.Scenarios, "scenarios", "", "scenario file (- for stdin): JSON lines {id, environment, payload, split} or a trajectory Parquet file (default: generated by the environment)")
	fs.StringVar(&o.Split, "split", "", "train, val or test: play only the scenarios of this split (a scenario's own split wins, one without a split is train) of the --scenarios file, an mcp tasks=FILE or a stdio program's answer, which is asked for it; the built-in games' scenarios are labelled with it (default: all, as labelled: train for the built-in games). A game's or stdio program's held-out set needs a --seed of its own: their scenarios are a function of the seed")
	fs.IntVar(&o.Groups, "groups", 0, "number of scenarios (groups) to run; 0 = every scenario in the file (required when generating, at most "+strconv.Itoa(MaxGeneratedGroups)+")")
	fs.IntVarP(&o.GroupSize, "group-size", "G", 4, "attempts per scenario (at most "+strconv.Itoa(MaxGroupSize)+")")
	fs.IntVar(&o.Concurrency, "concurrency", 8, "episodes in flight at once")
	fs.IntVar(&o.MaxTurns, "max-turns", 32, "assistant turns per episode before it is cut off (0 = no limit); an episode whose conversation outgrows the model's context (the server's 400 context_length_exceeded) after its first turn is cut there too, its turns kept with the metric truncated 1")
	fs.DurationVar(&o.Timeout, "episode-timeout", 5*time.Minute, "wall time per episode (0 = none)")
	flagval.PositiveDuration(fs, &o.StartTimeout, "start-timeout", DefaultStartTimeout, "wall time for an environment to start (a stdio program's hello, an MCP server's initialize and tool list, building the inbox)")
	fs.Int64Var(&o.Seed, "seed", 1, "seed for generated scenarios, environments, scripted policies and request seeds")
	fs.StringVar(&o.Run, "run", "collect", "run name recorded in every row and in ids (<run>-s<seed>-<tag>-g<place>, the tag a digest of the --scenarios file's scenarios, or of --env, --env-opt, --split and the scenarios generated for generated ones)")
	fs.StringVar(&o.Policy, "policy", "model", "who plays: model, or scripted[:NAME] (the environment's scripted policy, no model calls)")
	fs.StringVar(&o.MaxFailures, "max-failures", "", "stop once more episodes failed than this count, or this fraction of all episodes (e.g. 0.1), and exit 1; 0 stops at the first failure, as ART's gather does by default; default: never stop early, since a failed episode is kept as a row with its error that training skips (the run still exits 1 when every episode failed), except when every episode of the first group failed to connect to the model server (connection refused, or its host name not found), none succeeded and no model call was answered; give a count to play on regardless")
	fs.StringVar(&o.Model.Model, "model", "", "model name to request, e.g. myrun for the latest adapter (required unless --policy scripted)")
	fs.StringVar(&o.Model.BaseURL, "base-url", "", "OpenAI-compatible base URL, e.g. http://localhost:8000/v1 (default $OPENAI_BASE_URL)")
	fs.StringVar(&o.Model.APIKey, "api-key", "", "API key (default $OPENAI_API_KEY)")
	o.tempFlag, o.topPFlag = new(float64), new(float64)
	flagval.OptionalFloat(fs, o.tempFlag, "temperature", math.NaN(), "sampling temperature (default: the server's)")
	flagval.OptionalFloat(fs, o.topPFlag, "top-p", math.NaN(), "nucleus sampling top_p (default: the server's)")
	fs.StringVar(&o.TemplateKwargs, "chat-template-kwargs", "", `chat template kwargs sent as chat_template_kwargs on every model call, a JSON object, e.g. '{"enable_thinking":false}'; recorded on every row (metadata hone.chat_template_kwargs), so that hone-train lays the rows out under the prompt the model saw`)
	fs.IntVar(&o.Model.MaxTokens, "max-tokens", 0, "max tokens per turn (default: the server's)")
	fs.IntVar(&o.Model.Retries, "retries", 4, "retries per model call on 429, 5xx, timeouts and broken connections (each after a backoff doubling from 0.5s up to a minute, or the Retry-After the answer asks, up to a minute, when that is longer)")
	fs.DurationVar(&o.Model.RequestTimeout, "request-timeout", 2*time.Minute, "timeout of one model call attempt")
}

// envOpts is --env-opt: each value is KEY=VALUE, the value everything
// after the first "=" as written. pflag's string-to-string flag cut a
// value's leading and trailing '"' and read one holding a second "=" as a
// CSV record, splitting it at its commas; a command line or a system
// prompt holds quotes, commas and "=" of its own.
type envOpts struct{ m *map[string]string }

func (e *envOpts) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: want KEY=VALUE", s)
	}
	if *e.m == nil {
		*e.m = map[string]string{}
	}
	(*e.m)[k] = v
	return nil
}

// String is "" when no setting was given, so that --help prints no
// default.
func (e *envOpts) String() string {
	if e.m == nil || len(*e.m) == 0 {
		return ""
	}
	kv := make([]string, 0, len(*e.m))
	for k, v := range *e.m {
		kv = append(kv, k+"="+v)
	}
	slices.Sort(kv)
	return strings.Join(kv, " ")
}

func (e *envOpts) Type() string { return "KEY=VALUE" }

// finish moves the sampling flags that were set into Model.
func (o *Options) finish() {
	if o.tempFlag != nil && !math.IsNaN(*o.tempFlag) {
		o.Model.Temperature = o.tempFlag
	}
	if o.topPFlag != nil && !math.IsNaN(*o.topPFlag) {
		o.Model.TopP = o.topPFlag
	}
}

// Stats are a run's counts so far. They count the episodes of finished
// groups only, which are exactly the rows Run writes: an episode whose
// group a stop left unfinished is neither written nor counted.
type Stats struct {
	Groups, Episodes, Failures int
	Total                      int // groups planned
	// ContextCut counts the episodes that ended, without an error, where
	// the conversation outgrew the model's context (env.Play): a
	// --max-tokens that leaves a later turn no room cuts every episode
	// there, which a summary of failures alone does not show.
	ContextCut int
	// Unfinished and UnfinishedFailures count the episodes that ended in
	// groups a stop left unfinished, which are not written: a
	// --max-failures stop before any group finished counted "0 failed"
	// beside the failure that stopped it.
	Unfinished, UnfinishedFailures int
	RewardSum                      float64
	Rewarded                       int // episodes with a reward
	Tokens                         int64
	Elapsed                        time.Duration
}

// MeanReward is the mean over rewarded episodes (NaN when none).
func (s Stats) MeanReward() float64 {
	if s.Rewarded == 0 {
		return math.NaN()
	}
	return s.RewardSum / float64(s.Rewarded)
}

// addGroup counts a finished group's episodes; maxTurns is --max-turns,
// which tells a cut at the context (fewer turns than it allows) from its
// own.
func (s *Stats) addGroup(ts []trajectory.Trajectory, maxTurns int) {
	s.Groups++
	for i := range ts {
		t := &ts[i]
		s.Episodes++
		if t.Error != "" {
			s.Failures++
		} else if t.Reward != nil {
			s.RewardSum += *t.Reward
			s.Rewarded++
		}
		if t.Error == "" && t.Metrics["truncated"] == 1 && (maxTurns <= 0 || t.Metrics["assistant_turns"] < float64(maxTurns)) {
			s.ContextCut++
		}
		for _, m := range t.Messages {
			s.Tokens += int64(len(m.TokenIDs))
		}
	}
}

// countUnfinished counts the episodes that ended (counts, per group;
// failed of them all) beyond those of the finished groups already counted.
func (s *Stats) countUnfinished(counts map[int]int, failed int) {
	ended := 0
	for _, n := range counts {
		ended += n
	}
	s.Unfinished, s.UnfinishedFailures = ended-s.Episodes, failed-s.Failures
}

// String is the one-line summary. The mean reward is over the episodes
// that succeeded, and says so when some failed; with none, it says that
// instead of printing NaN.
func (s Stats) String() string {
	// The rate is of the episodes written; with none, "0.00 episodes/s"
	// read as a run that played none, where it may have played some of
	// groups that did not finish: it is left out.
	rate := ""
	if s.Episodes > 0 && s.Elapsed > 0 {
		rate = fmt.Sprintf(", %.2f episodes/s", float64(s.Episodes)/s.Elapsed.Seconds())
	}
	var reward string
	switch {
	case s.Rewarded > 0 && s.Failures > 0:
		reward = fmt.Sprintf("mean reward %.3f over the %d that succeeded", s.MeanReward(), s.Rewarded)
	case s.Rewarded > 0:
		reward = fmt.Sprintf("mean reward %.3f", s.MeanReward())
	case s.Episodes == 0:
		reward = "no group finished"
	case s.Failures == s.Episodes:
		reward = "no episode succeeded"
	default:
		reward = "no rewards"
	}
	cut := ""
	if s.ContextCut > 0 {
		cut = fmt.Sprintf(", %d cut at the model's context", s.ContextCut)
	}
	unfinished := ""
	if s.Unfinished > 0 {
		noun := "episodes"
		if s.Unfinished == 1 {
			noun = "episode"
		}
		unfinished = fmt.Sprintf(" written, %d %s (%d failed) of groups not finished, not written,", s.Unfinished, noun, s.UnfinishedFailures)
	}
	return fmt.Sprintf("%d/%d groups, %d episodes (%d failed%s)%s in %.1fs%s, %s, %d tokens",
		s.Groups, s.Total, s.Episodes, s.Failures, cut, unfinished, s.Elapsed.Seconds(), rate, reward, s.Tokens)
}

// progress hands the counts so far to o.Progress, if set.
func (o *Options) progress(st Stats) {
	if o.Progress != nil {
		o.Progress(st)
	}
}

// summarize hands the final counts to o.Summary, if set.
func (o *Options) summarize(st *Stats) {
	if o.Summary != nil {
		o.Summary(*st)
	}
}

type job struct {
	group, attempt int
}

type result struct {
	job
	t trajectory.Trajectory
	// cut: the episode failed once the run was stopping, maybe for the
	// stop, and is left out. One that failed before is kept, whenever
	// Run takes it.
	cut bool
	// fail: where the episode failed (runEpisode).
	fail failKind
}

// Run plays GroupSize episodes of each scenario and writes the finished
// groups to o.Out in scenario order. A failed episode is a row with Error
// set. On cancellation every finished group is written, none partially,
// and the error wraps stageerr.ErrInterrupted. Once more episodes failed
// than MaxFailures allows, Run stops the same way and the error wraps
// ErrTooManyFailures; when the run ends with every episode failed, the
// error wraps ErrAllFailed. Both name the most common episode error, and
// the output is complete either way: the caller decides to keep it. The
// counts go to o.Summary.
func Run(ctx context.Context, o Options) error {
	var st Stats
	defer o.summarize(&st)
	scripted, policyName, err := o.prepare()
	if err != nil {
		return err
	}
	scs, places, scEnvs, closeEnvs, err := loadScenarios(ctx, &o, scripted)
	defer closeEnvs()
	if err != nil && ctx.Err() != nil {
		// Stopped while the scenarios loaded or an environment started:
		// whatever failed then failed for that, not for bad usage.
		return fmt.Errorf("%w before the first episode: %w", stageerr.ErrInterrupted, context.Cause(ctx))
	}
	if err != nil {
		return err
	}
	warnStoredSettings(&o, scs, scEnvs)
	maxFail, err := failureLimit(o.MaxFailures, len(scs), o.GroupSize)
	if err != nil {
		return err
	}
	st.Total = len(scs)
	o.progress(st) // a progress line can show the total from the start
	w := trajectory.NewWriter(o.Out, trajectory.WriterOptions{Metadata: map[string]string{"hone.collect.run": o.Run}})
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var model *Model
	if !scripted {
		model = NewModel(o.Model)
		model.stop = func(err error) { cancel(err) }
	}
	g, gctx := errgroup.WithContext(runCtx)
	results := startEpisodes(gctx, g, o, scs, places, scEnvs, policyName, model)

	// Assemble groups; write them in scenario order as they complete.
	start := time.Now()
	pending := map[int][]trajectory.Trajectory{}
	counts := map[int]int{}
	finished := map[int]bool{}
	next := 0
	failed := 0 // every failed episode so far, finished group or not: --max-failures counts these
	succeeded := 0
	var tally errorTally
	var writeErr error
	write := func(gi int) {
		if writeErr != nil {
			return
		}
		ts := pending[gi]
		delete(pending, gi)
		grp := trajectory.Group{ID: groupID(o, places[gi]), Trajectories: ts, Metadata: groupMetadata(o, scs[gi], scEnvs[gi])}
		if err := w.WriteGroup(context.WithoutCancel(ctx), grp); err != nil {
			writeErr = fmt.Errorf("write group %s: %w", groupID(o, places[gi]), err)
			cancel(writeErr)
		}
	}
	for r := range results {
		if r.cut {
			continue // cut short by the stop: its group is not finished
		}
		if pending[r.group] == nil {
			pending[r.group] = make([]trajectory.Trajectory, o.GroupSize)
		}
		pending[r.group][r.attempt] = r.t
		counts[r.group]++
		if r.t.Error != "" {
			failed++
			tally.add(r.t.Error, r.t.ScenarioID, r.fail)
			o.Log.Warn("episode failed", "trajectory", r.t.ID, "scenario", r.t.ScenarioID, "error", r.t.Error)
			if maxFail >= 0 && failed > maxFail {
				cancel(tooManyFailures(o, scripted, &tally, failed, succeeded, maxFail, len(scs)*o.GroupSize))
			}
		} else {
			succeeded++
		}
		if counts[r.group] == o.GroupSize {
			// Counted when finished: every finished group is written,
			// in order now or after a stop below.
			finished[r.group] = true
			st.addGroup(pending[r.group], o.MaxTurns)
			if err := unreachable(o, model, &tally, st.Groups, failed, succeeded); err != nil {
				cancel(err)
			}
			for finished[next] {
				write(next)
				next++
			}
			st.Elapsed = time.Since(start)
			o.progress(st)
		}
	}
	gerr := g.Wait()
	st.countUnfinished(counts, failed)
	// After a stop, groups finished out of order are still whole: keep them.
	for gi := next; gi < len(scs); gi++ {
		if finished[gi] {
			write(gi)
		}
	}
	st.Elapsed = time.Since(start)
	if err := w.Close(); err != nil && writeErr == nil {
		writeErr = fmt.Errorf("close output: %w", err)
	}
	switch {
	case writeErr != nil:
		return writeErr
	case gerr != nil:
		return gerr
	case errors.Is(context.Cause(runCtx), ErrTooManyFailures) || errors.Is(context.Cause(runCtx), ErrUnreachable) || errors.Is(context.Cause(runCtx), ErrMaxTokensOverCap):
		return context.Cause(runCtx)
	case ctx.Err() == nil && errors.Is(context.Cause(runCtx), ErrModelNotFound):
		return model.notFoundAdvice(ctx, context.Cause(runCtx))
	case ctx.Err() != nil:
		return fmt.Errorf("%w: %w", stageerr.ErrInterrupted, context.Cause(ctx))
	case st.Episodes > 0 && st.Failures == st.Episodes:
		return fmt.Errorf("%w (%d of %d), %s; %s", ErrAllFailed, st.Failures, st.Episodes, tally.mostCommon(), failureAdvice(o, scripted, &tally, st.Failures))
	}
	return nil
}

// tooManyFailures is the cause of a stop for more than --max-failures
// (maxFail of episodes) failed: how many, the most common error, and what
// to check (stopAdvice).
func tooManyFailures(o Options, scripted bool, t *errorTally, failed, succeeded, maxFail, episodes int) error {
	advice := ""
	if a := stopAdvice(o, scripted, t, failed, succeeded); a != "" {
		advice = "; " + a
	}
	return fmt.Errorf("%w: %d failed, more than --max-failures %s allows (%d of %d episodes), %s%s",
		ErrTooManyFailures, failed, o.MaxFailures, maxFail, episodes, t.mostCommon(), advice)
}

// unreachable is the cause of a stop for a model server that refused
// every connection, or whose host name did not resolve (ErrUnreachable),
// once the first group finished (groups finished so far) with all its
// episodes, and every one failed so far, the same one of those two ways,
// and none succeeded; nil otherwise, or when --max-failures was
// given, whose count then decides alone. A server that answered any call
// of model is no dead one: it came back (a serving pod restarted as the
// run began) while the episodes it answered are still being played.
func unreachable(o Options, model *Model, t *errorTally, groups, failed, succeeded int) error {
	if o.MaxFailures != "" || groups != 1 || succeeded > 0 || failed == 0 || (t.refused != failed && t.noHost != failed) {
		return nil
	}
	if model == nil || model.answered.Load() {
		return nil
	}
	where := urlmask.Shown(o.Model.BaseURL)
	if where == "" {
		where = "api.openai.com (no --base-url or $OPENAI_BASE_URL given)"
	}
	ended := fmt.Sprintf("the %d episodes ended so far, a whole group among them, all failed", failed)
	if failed == 1 {
		ended = "the one episode ended so far, a whole group, failed"
	}
	if t.noHost == failed {
		return fmt.Errorf("%w: %s to look up the host %s of %s, %s; check the host name in --base-url (a typo?) and the machine's DNS; the run stopped, as each episode spends its retries the same way (--max-failures N plays on regardless)",
			ErrUnreachable, ended, baseHost(o.Model.BaseURL), where, t.mostCommon())
	}
	return fmt.Errorf("%w: %s to connect to %s (connection refused), %s; check that the server is up and listens there (--base-url); the run stopped, as each episode spends its retries the same way (--max-failures N plays on regardless)",
		ErrUnreachable, ended, where, t.mostCommon())
}

// baseHost is the host name of base, a base URL whose host failed its
// lookup (so it parsed), or base itself if it does not parse.
func baseHost(base string) string {
	u, err := url.Parse(base)
	if err != nil || u.Hostname() == "" {
		return urlmask.Shown(base)
	}
	return u.Hostname()
}

// prepare fills the defaults Run needs (flags moved into Model, a
// discarding logger, NewEnv) and checks the options that need no file or
// environment, returning the policy's kind and name.
func (o *Options) prepare() (scripted bool, policyName string, err error) {
	o.finish()
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	builtin := o.NewEnv == nil
	if builtin {
		o.NewEnv = NewEnv
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.StartTimeout < 0 {
		return false, "", stageerr.Usagef("--start-timeout %v: want a positive duration", o.StartTimeout)
	}
	if o.GroupSize <= 0 || o.Concurrency <= 0 {
		return false, "", stageerr.Usagef("--group-size and --concurrency must be positive")
	}
	if err := o.checkRanges(); err != nil {
		return false, "", err
	}
	switch o.Split {
	case "", trajectory.SplitTrain, trajectory.SplitVal, trajectory.SplitTest:
	default:
		return false, "", stageerr.Usagef("--split %q: want train, val or test", o.Split)
	}
	o.warnHeldOutSeed()
	if scripted, policyName, err = parsePolicy(o.Policy); err != nil {
		return false, "", err
	}
	// Checked before --model, as every usage error that needs no file
	// is: the user who fixed the first met a misspelt --env-opt key only
	// on the next try. With a scenario file the settings are checked as
	// each environment opens: its scenarios may name their own, and then
	// --env is never opened.
	if builtin && o.Env != "" && o.Scenarios == "" {
		if err := CheckEnvOpts(o.Env, o.EnvOpts); err != nil {
			return false, "", inEnv(o.Env, err)
		}
	}
	if !scripted && o.Model.Model == "" {
		return false, "", stageerr.Usagef("--model is required unless --policy scripted")
	}
	if o.TemplateKwargs != "" {
		kw, canon, err := trajectory.CanonicalChatTemplateKwargs(o.TemplateKwargs)
		if err != nil {
			return false, "", stageerr.Usagef("--chat-template-kwargs %w", err)
		}
		o.Model.TemplateKwargs, o.templateKwargs = kw, canon
		if scripted {
			// Warned, not refused, as hone-train's idle flags are: a
			// script may pass the same flags to every call.
			o.Log.Warn("--chat-template-kwargs does nothing with --policy scripted: no model is called, and the rows record no kwargs", "policy", o.Policy)
		}
	}
	if scripted {
		o.warnModelFlags()
	}
	// A base URL without its scheme (vLLM's "localhost:8000/v1") is
	// refused before any episode: each call failed with "unsupported
	// protocol scheme", and the run only ended, exit 1, once all had.
	if !scripted && o.Model.BaseURL != "" {
		if err := flagval.BaseURL("--base-url (or $OPENAI_BASE_URL)", o.Model.BaseURL); err != nil {
			return false, "", stageerr.Usage(err)
		}
	}
	return scripted, policyName, nil
}

// The largest --group-size, and --groups of generated scenarios, that a
// run takes (checkRanges).
const (
	MaxGroupSize       = 1 << 16
	MaxGeneratedGroups = 1 << 20
)

// checkRanges refuses the negative counts and durations, and the sampling
// values no server takes, before any episode. Each negative one was read
// as its unset value without a word (--max-tokens -3 as the server's cap,
// --max-turns -1 and the timeouts as no limit, --retries -1 as none, a
// negative --groups as every scenario of the file), and a negative
// --temperature or a --top-p outside (0, 1], the range of hone-serve and
// vLLM, failed every episode with the server's 400 only once the run had
// played them all.
func (o *Options) checkRanges() error {
	for _, c := range []struct {
		flag string
		v    int
		want string
	}{
		{"--groups", o.Groups, "0 (every scenario of the file) or more"},
		{"--max-turns", o.MaxTurns, "0 (no limit) or more"},
		{"--max-tokens", o.Model.MaxTokens, "0 (the server's) or more"},
		{"--retries", o.Model.Retries, "0 or more"},
	} {
		if c.v < 0 {
			return stageerr.Usagef("%s %d: want %s", c.flag, c.v, c.want)
		}
	}
	// Sizes past what one run can hold are refused before anything is
	// allocated: a group's attempts are held together until it finishes
	// (-G 1099511627776 panicked in makeslice), and generated scenarios
	// are all made at the start (--groups 100000000 ran out of memory).
	// A scenario file's length bounds its own --groups.
	if o.GroupSize > MaxGroupSize {
		return stageerr.Usagef("--group-size %d: want at most %d attempts per scenario", o.GroupSize, MaxGroupSize)
	}
	if o.Scenarios == "" && o.Groups > MaxGeneratedGroups {
		return stageerr.Usagef("--groups %d: want at most %d generated scenarios in one run (play a larger set as several runs, each with a --seed of its own)", o.Groups, MaxGeneratedGroups)
	}
	if o.Timeout < 0 {
		return stageerr.Usagef("--episode-timeout %v: want 0 (none) or more", o.Timeout)
	}
	if o.Model.RequestTimeout < 0 {
		return stageerr.Usagef("--request-timeout %v: want 0 (none) or more", o.Model.RequestTimeout)
	}
	if t := o.Model.Temperature; t != nil && *t < 0 {
		return stageerr.Usagef("--temperature %v: want 0 or more", *t)
	}
	if p := o.Model.TopP; p != nil && (*p <= 0 || *p > 1) {
		greedy := ""
		if *p == 0 {
			// OpenAI takes top_p 0 for greedy sampling, vLLM and
			// hone-serve do not; temperature 0 is greedy on all.
			greedy = "; for greedy sampling give --temperature 0"
		}
		return stageerr.Usagef("--top-p %v: want more than 0 and at most 1, as vLLM and hone-serve take it%s", *p, greedy)
	}
	return nil
}

// generate asks e for --groups scenarios of --split. Those of an
// environment whose scenarios carry their own split (a task file, a stdio
// program) are chosen by it; a built-in game's are a function of the seed,
// with no split of their own, and are labelled --split.
func (o *Options) generate(ctx context.Context, e env.Env) ([]env.Scenario, error) {
	if o.Split == "" {
		return e.Scenarios(ctx, o.Seed, o.Groups)
	}
	if src, ok := e.(env.SplitSource); ok {
		return src.ScenariosOf(ctx, o.Seed, o.Groups, o.Split)
	}
	scs, err := e.Scenarios(ctx, o.Seed, o.Groups)
	for i := range scs {
		scs[i].Split = o.Split
	}
	return scs, err
}

// warnHeldOutSeed warns of generated scenarios labelled val or test
// under the default --seed: scenarios are a function of the seed, so they
// are those a train run with the default seed plays, and an eval on them
// measures training data. Warned, not given a seed of their own by
// default: an eval set logged step after step must stay the same set, and
// one made so before would change under the same command.
func (o *Options) warnHeldOutSeed() {
	// An mcp environment's tasks come from its task file, whatever the
	// seed: a held-out task there is one by its own split.
	if o.flags == nil || o.Scenarios != "" || o.Env == "mcp" || o.flags.Changed("seed") || (o.Split != trajectory.SplitVal && o.Split != trajectory.SplitTest) {
		return
	}
	o.Log.Warn(fmt.Sprintf("--split %s generates the same scenarios as a train run under the default --seed %d: give the held-out set a --seed of its own (e.g. --seed 800001), the same for every eval", o.Split, o.Seed))
}

// warnModelFlags warns once, naming them, of the model's flags given
// with a scripted policy, which calls no model: dropped without a word, a
// --model meant to play left the user with scripted rows. Warned, not
// refused, as --chat-template-kwargs is; an endpoint from
// $OPENAI_BASE_URL, which a shell may set for every command, is no flag.
func (o *Options) warnModelFlags() {
	if o.flags == nil {
		return
	}
	var given []string
	for _, name := range []string{"model", "base-url", "api-key", "temperature", "top-p", "max-tokens", "retries", "request-timeout"} {
		if o.flags.Changed(name) {
			given = append(given, "--"+name)
		}
	}
	verb := " do"
	switch len(given) {
	case 0:
		return
	case 1:
		verb = " does"
	}
	o.Log.Warn(strings.Join(given, ", ")+verb+" nothing with --policy scripted: no model is called", "policy", o.Policy)
}

// errorTally counts episode errors by their text, to name the most common
// one when a run fails. Errors often name their scenario ("guess: scenario
// s3: payload: …"), so the text is counted with the scenario's id left
// out: the same fault in every scenario is one error, not one per
// scenario. It keeps at most maxDistinct texts: a run whose every error
// differs must not grow it without bound.
type errorTally struct {
	count map[string]int
	first map[string]string // the first error counted under each text, as it came
	many  map[string]bool   // texts counted for more than one scenario
	order []string          // first seen first, so ties go to the earliest
	other int               // errors not kept
	// promptFull counts the errors of episodes whose first model call
	// was refused for the model's context; promptMsg is the first such
	// error, whose words may give the sizes (failureAdvice).
	promptFull int
	promptMsg  string
	// envFail counts the errors of episodes that failed in the
	// environment while the model answered every call.
	envFail int
	// refused counts the errors of episodes whose model call found no
	// server listening (failRefused).
	refused int
	// noHost counts the errors of episodes whose model call failed to
	// look up the server's host name (failNoHost).
	noHost int
}

const maxDistinct = 64

// scenarioMark stands for the scenario's id in a counted error text.
const scenarioMark = "<scenario>"

// add counts msg, the error of an episode of scenario id that failed
// where fail says.
func (t *errorTally) add(msg, id string, fail failKind) {
	switch fail {
	case failPromptFull:
		if t.promptFull == 0 {
			t.promptMsg = msg
		}
		t.promptFull++
	case failEnv:
		t.envFail++
	case failRefused:
		t.refused++
	case failNoHost:
		t.noHost++
	}
	if t.count == nil {
		t.count, t.first, t.many = map[string]int{}, map[string]string{}, map[string]bool{}
	}
	key := withoutScenario(msg, id)
	if _, ok := t.count[key]; !ok {
		if len(t.order) == maxDistinct {
			t.other++
			return
		}
		t.order = append(t.order, key)
		t.first[key] = msg
	} else if t.first[key] != msg {
		t.many[key] = true
	}
	t.count[key]++
}

// withoutScenario is msg with each occurrence of the scenario id that
// stands as a word of its own (not inside a longer name or number)
// replaced by scenarioMark.
func withoutScenario(msg, id string) string {
	if id == "" {
		return msg
	}
	inName := func(s string, i int) bool { // s[i] would continue an id
		if i < 0 || i >= len(s) {
			return false
		}
		c := s[i]
		return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	var b strings.Builder
	for rest := msg; ; {
		i := strings.Index(rest, id)
		if i < 0 {
			b.WriteString(rest)
			return b.String()
		}
		end := i + len(id)
		if inName(rest, i-1) || inName(rest, end) {
			b.WriteString(rest[:end])
		} else {
			b.WriteString(rest[:i])
			b.WriteString(scenarioMark)
		}
		rest = rest[end:]
	}
}

// mostCommon describes the most frequent error, shortened to one line.
// An error counted for several scenarios is shown with the scenario left
// out; one seen for a single scenario as it came.
func (t *errorTally) mostCommon() string {
	best := ""
	for _, m := range t.order {
		if best == "" || t.count[m] > t.count[best] {
			best = m
		}
	}
	if best == "" {
		return "no error recorded"
	}
	shown := t.first[best]
	if t.many[best] {
		shown = best
	}
	msg := strings.Join(strings.Fields(shown), " ")
	if r := []rune(msg); len(r) > 300 {
		msg = string(r[:300]) + "…"
	}
	total := t.other
	for _, n := range t.count {
		total += n
	}
	if t.count[best] == total {
		return "all with: " + msg
	}
	return fmt.Sprintf("most often (%d of %d): %s", t.count[best], total, msg)
}

// loadScenarios reads or generates the scenarios, keeps o.Shard's part of
// them (places[i] is scs[i]'s place in the whole run, which names its
// group and seeds its episodes), and opens the environment of each. For a
// file or an environment, it sets o.idTag (groupID). closeEnvs closes the
// environments opened, also after an error.
func loadScenarios(ctx context.Context, o *Options, scripted bool) (scs []env.Scenario, places []int, scEnvs []env.Env, closeEnvs func(), err error) {
	envs := map[string]env.Env{}
	closeEnvs = func() {
		for _, e := range envs {
			if c, ok := e.(io.Closer); ok {
				c.Close()
			}
		}
	}
	getEnv := func(name string) (env.Env, error) {
		if name == "" {
			name = o.Env
		}
		if name == "" {
			return nil, stageerr.Usagef("no --env given and the scenario names none")
		}
		if e, ok := envs[name]; ok {
			return e, nil
		}
		var e env.Env
		err := StartWithin(ctx, o.StartTimeout, func(ctx context.Context) error {
			var err error
			e, err = o.NewEnv(ctx, name, o.EnvOpts)
			return err
		})
		if err != nil {
			// Bad usage only when NewEnv blames the settings: a program
			// that crashes as it starts or a server out of reach is a
			// failure of the run (exit 1), as hone-collect scenarios says
			// of the same server.
			return nil, inEnv(name, err)
		}
		// An MCP environment says in the run's log when a restarted
		// server lists other tools.
		if l, ok := e.(interface{ SetLog(*slog.Logger) }); ok {
			l.SetLog(o.Log)
		}
		// It restarts a lost server within --start-timeout too, as it
		// started the first.
		if st, ok := e.(interface{ SetStartTimeout(time.Duration) }); ok {
			st.SetStartTimeout(o.StartTimeout)
		}
		envs[name] = e
		if scripted {
			// Refused as the environment opens, before it is asked
			// for scenarios: generating them (and warning of too few)
			// was work for a run that could not play them.
			return e, refuseUnscripted(e)
		}
		return e, nil
	}
	if o.Scenarios != "" {
		if scs, err = ReadScenarios(ctx, o.Scenarios); err != nil {
			return nil, nil, nil, closeEnvs, stageerr.BadInput(err)
		}
		// Named without an object's query, which may hold the
		// endpoint's password, as ReadScenarios' errors name it.
		shown := fileset.DisplayName(o.Scenarios)
		if len(scs) == 0 {
			return nil, nil, nil, closeEnvs, stageerr.BadInput(fmt.Errorf("scenarios %s: the file holds no scenario", shown))
		}
		if o.Split != "" {
			all := scs
			if scs = env.OfSplit(all, o.Split); len(scs) == 0 {
				return nil, nil, nil, closeEnvs, stageerr.BadInput(fmt.Errorf("scenarios %s: none of its %d scenarios is of split %q (it has %s)", shown, len(all), o.Split, env.Splits(all)))
			}
		}
		// Of the scenarios of the split, before --groups: a run of the
		// first groups plays the same episodes as one of all, and names
		// them alike.
		o.idTag = scenariosTag(scs)
		if o.Groups > 0 && o.Groups < len(scs) {
			scs = scs[:o.Groups]
		}
		// A run of fewer groups than asked is said, not silent, once the
		// environments opened: a run refused then (no scripted policy)
		// warned first of what it did not play.
		if o.Groups > len(scs) {
			available := len(scs)
			defer func() {
				if err == nil {
					o.Log.Warn("fewer scenarios than --groups: playing those there are", "scenarios", shown, "split", o.Split,
						"groups", o.Groups, "available", available)
				}
			}()
		}
	} else {
		if o.Groups <= 0 {
			return nil, nil, nil, closeEnvs, stageerr.Usagef("--groups is required when scenarios are generated")
		}
		e, err := getEnv("")
		if err != nil {
			return nil, nil, nil, closeEnvs, err
		}
		if scs, err = o.generate(ctx, e); err != nil {
			return nil, nil, nil, closeEnvs, fmt.Errorf("generate scenarios: %w", err)
		}
		if len(scs) < o.Groups { // a stdio program or task list may hold fewer
			o.Log.Warn("the environment made fewer scenarios than --groups: playing those there are", "env", o.Env,
				"split", o.Split, "groups", o.Groups, "made", len(scs))
		}
		o.idTag = envTag(o.Env, o.EnvOpts, o.Split, scs)
	}
	places = o.Shard.Places(len(scs))
	mine := make([]env.Scenario, len(places))
	for i, k := range places {
		mine[i] = scs[k]
	}
	scs = mine
	scEnvs = make([]env.Env, len(scs))
	for i, sc := range scs {
		if o.Scenarios == "" {
			scEnvs[i] = envs[o.Env] // generated: the environment that made them
		} else if scEnvs[i], err = getEnv(sc.Env); err != nil {
			return nil, nil, nil, closeEnvs, fmt.Errorf("scenario %s: %w", sc.ID, err)
		}
	}
	return scs, places, scEnvs, closeEnvs, nil
}

// warnStoredSettings warns once per setting when an --env-opt given for a
// replay differs from the value a scenario's payload stores: the stored
// one is played (a replay is the episode it recorded), and the user who
// asked for opponent=minimax played the stored opponent without a word.
// A setting not given on the command line is the scenario's by design and
// not warned of; generated scenarios store the given settings.
func warnStoredSettings(o *Options, scs []env.Scenario, scEnvs []env.Env) {
	if o.Scenarios == "" {
		return
	}
	type setting struct{ env, key string }
	type differ struct {
		stored []string // the distinct stored values, in file order
		n      int      // scenarios that store another value
	}
	diffs := map[setting]*differ{}
	var order []setting
	for i, sc := range scs {
		ss, ok := scEnvs[i].(env.StoredSettings)
		if !ok {
			continue
		}
		for _, ov := range ss.Overrides(sc) {
			if _, given := o.EnvOpts[ov.Key]; !given {
				continue
			}
			k := setting{scEnvs[i].Name(), ov.Key}
			d := diffs[k]
			if d == nil {
				d = &differ{}
				diffs[k] = d
				order = append(order, k)
			}
			d.n++
			if !slices.Contains(d.stored, ov.Stored) {
				d.stored = append(d.stored, ov.Stored)
			}
		}
	}
	for _, k := range order {
		d := diffs[k]
		o.Log.Warn("--env-opt differs from the setting the scenarios store: the stored one is played, so that a replay is the episode it recorded (generate new scenarios with --env to play the given one)",
			"env", k.env, "setting", k.key, "given", o.EnvOpts[k.key], "stored", strings.Join(d.stored, ","),
			"scenarios", d.n, "of", len(scs))
	}
}

// refuseUnscripted refuses e for a scripted policy when it has none. A
// stdio program is Scripted by type, with the policies its hello named:
// none is no scripted policy either.
func refuseUnscripted(e env.Env) error {
	s, ok := e.(env.Scripted)
	if !ok {
		return stageerr.Usagef("environment %s has no scripted policy: play it with a model (--model, --base-url)", e.Name())
	}
	if len(s.Policies()) == 0 {
		return stageerr.Usagef("environment %s has no scripted policy: its hello lists no \"policies\" (docs/stdio-env.md); play it with a model (--model, --base-url)", e.Name())
	}
	return nil
}

// startEpisodes plays every episode on o.Concurrency workers at most in g and
// returns their results, closed once the workers are done. Workers stop
// when gctx ends. model is nil when a scripted policy plays.
func startEpisodes(gctx context.Context, g *errgroup.Group, o Options, scs []env.Scenario, places []int, scEnvs []env.Env, policyName string, model *Model) <-chan result {
	scripted := model == nil
	// No more workers than episodes: a --concurrency far above them
	// sized the queues and the workers alike, and a run of two episodes
	// died out of memory.
	workers := min(o.Concurrency, len(scs)*o.GroupSize)
	jobs := make(chan job, workers)
	results := make(chan result, workers)
	g.Go(func() error {
		defer close(jobs)
		for gi := range scs {
			for a := 0; a < o.GroupSize; a++ {
				select {
				case jobs <- job{gi, a}:
				case <-gctx.Done():
					return nil
				}
			}
		}
		return nil
	})
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		g.Go(func() error {
			defer wg.Done()
			for j := range jobs {
				if gctx.Err() != nil {
					return nil
				}
				var pol env.Policy
				seed := episodeSeed(o.Seed, places[j.group], j.attempt)
				if scripted {
					s := scEnvs[j.group].(env.Scripted)
					name := policyName
					if name == "" {
						name = s.Policies()[0]
					}
					p, err := s.Policy(name, seed)
					if err != nil {
						return stageerr.Usage(err)
					}
					pol = p
				} else {
					pol = model.Policy(seed)
				}
				t, fail := runEpisode(gctx, o, scEnvs[j.group], scs[j.group], pol, seed)
				cut := t.Error != "" && gctx.Err() != nil
				if c, ok := pol.(io.Closer); ok {
					c.Close() // scripted policies backed by a process
				}
				t.GroupID = groupID(o, places[j.group])
				t.ID = fmt.Sprintf("%s-a%03d", t.GroupID, j.attempt)
				// Handed over even after a stop: Run reads every result
				// until the workers are done, and keeps an episode that
				// finished (its group may be whole), failed or not; one
				// that failed once the stop came is marked cut, which Run
				// leaves out. Judged here, when the episode ended, not
				// when Run takes it: a failure from before the stop,
				// taken after it, was lost with its group.
				results <- result{j, t, cut, fail}
			}
			return nil
		})
	}
	go func() { wg.Wait(); close(results) }()
	return results

}

// groupMetadata is a group's metadata (ART's TrajectoryGroup.metadata,
// which ART's examples fill with the scenario): the scenario's id, its
// environment and split, and the run's --seed, which seeds the episodes
// (and made the scenarios, when they were generated).
func groupMetadata(o Options, sc env.Scenario, e env.Env) map[string]string {
	m := map[string]string{"scenario_id": sc.ID, "env": e.Name(), "seed": strconv.FormatInt(o.Seed, 10)}
	if sc.Split != "" {
		m["split"] = sc.Split
	}
	return m
}

// groupID names the group of the scenario at place gi:
// <run>-s<seed>-<tag>-g<gi>, where the tag tells apart the scenarios that
// runs of the same name and seed play at gi: for a --scenarios file
// (scenariosTag) those of other files or of another split of the file,
// for generated ones (envTag) those of another environment, other
// settings or another split.
func groupID(o Options, gi int) string {
	return fmt.Sprintf("%s-s%d-%s-g%05d", o.Run, o.Seed, o.idTag, gi)
}

// scenariosTag is "f" and 8 hex digits of a SHA-256 of the scenarios (id,
// environment, split, payload), in order: the same for the same scenarios
// on every run and machine, whichever format the file has, and unlike for
// others but by a chance of about one in four billion.
func scenariosTag(scs []env.Scenario) string {
	h := sha256.New()
	hashScenarios(h, scs)
	return "f" + hex.EncodeToString(h.Sum(nil)[:4])
}

// hashScenarios writes each scenario's id, environment, split and payload
// into h, each field after its length, so that no two lists of fields
// write the same bytes.
func hashScenarios(h hash.Hash, scs []env.Scenario) {
	for _, sc := range scs {
		for _, f := range [][]byte{[]byte(sc.ID), []byte(sc.Env), []byte(sc.Split), sc.Payload} {
			h.Write(binary.AppendUvarint(nil, uint64(len(f))))
			h.Write(f)
		}
	}
}

// envTag is "e" and 8 hex digits of a SHA-256 of the environment's
// name, its settings (sorted by key), the split generated scenarios are
// labelled with, and the scenarios it generated. The settings alone were
// not enough: a program's scenarios can change under the same command
// line (an edited --env-opt tasks=FILE, a stdio program reading other
// data), and the new scenarios took the old ids. Settings that change
// nothing (a default written out) still change the tag: ids need only
// differ where the scenarios may, and be the same for the same command
// line and scenarios.
func envTag(name string, opts map[string]string, split string, scs []env.Scenario) string {
	h := sha256.New()
	field := func(f string) {
		// After its length, as in hashScenarios.
		h.Write(binary.AppendUvarint(nil, uint64(len(f))))
		h.Write([]byte(f))
	}
	field(name)
	field(split)
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		field(k)
		field(opts[k])
	}
	hashScenarios(h, scs)
	return "e" + hex.EncodeToString(h.Sum(nil)[:4])
}

// episodeSeed mixes the run seed with the episode's place (splitmix64), so
// every episode has its own stream and the same one on every run.
func episodeSeed(seed int64, group, attempt int) int64 {
	z := uint64(seed) + 0x9e3779b97f4a7c15*uint64(group*1_000_003+attempt+1)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return int64((z ^ (z >> 31)) >> 1)
}

func parsePolicy(s string) (scripted bool, name string, err error) {
	switch {
	case s == "" || s == "model":
		return false, "", nil
	case s == "scripted":
		return true, "", nil
	case strings.HasPrefix(s, "scripted:"):
		return true, strings.TrimPrefix(s, "scripted:"), nil
	}
	return false, "", stageerr.Usagef("--policy %q: want model or scripted[:NAME]", s)
}

// failureLimit turns --max-failures into a count (-1: no limit) of the
// episodes of groups of size each, refusing a size whose episodes an int
// cannot count: the run counts them so (the workers too), and the
// product wrapped, to 0 workers and a run that waited forever, or below
// 0 and a panic.
func failureLimit(s string, groups, size int) (int, error) {
	if groups > 0 && size > math.MaxInt/groups {
		return 0, stageerr.Usagef("--group-size %d: %d groups of it are more episodes than a run can count", size, groups)
	}
	episodes := groups * size
	if s == "" {
		return -1, nil
	}
	if n, err := strconv.Atoi(s); err == nil && n >= 0 {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f >= 0 && f < 1) { // NaN too
		return 0, stageerr.Usagef("--max-failures %q: want a count or a fraction in [0,1)", s)
	}
	// The share of the episodes as the decimal written: 0.29 of 100 is
	// 29, where the float product 28.999… would truncate to 28.
	if r, ok := new(big.Rat).SetString(s); ok {
		r.Mul(r, new(big.Rat).SetInt64(int64(episodes)))
		return int(new(big.Int).Quo(r.Num(), r.Denom()).Int64()), nil
	}
	return int(f * float64(episodes)), nil
}

// failKind says where an episode failed, for the advice of a run whose
// episodes all did (failureCause).
type failKind int

const (
	failOther failKind = iota // the model's calls, a timeout, or no failure
	// failPromptFull: the episode failed at its first model call, refused
	// for the model's context (env.Play fails with env.ErrContextFull
	// only there; later it cuts the episode).
	failPromptFull
	// failEnv: the environment failed (start, reset, step or close)
	// while every model call was answered.
	failEnv
	// failRefused: a model call found no server listening (connection
	// refused), after its retries.
	failRefused
	// failNoHost: a model call failed to look up the server's host name
	// (a mistyped --base-url host, or no resolver reachable), after its
	// retries.
	failNoHost
)

// watchedPolicy records whether its policy failed, and how many calls
// it made: an episode that failed otherwise failed in the environment.
type watchedPolicy struct {
	env.Policy
	failed bool
	calls  int
}

func (p *watchedPolicy) Act(ctx context.Context, msgs []trajectory.Message, tools []trajectory.Tool) (trajectory.Message, error) {
	p.calls++
	m, err := p.Policy.Act(ctx, msgs, tools)
	if err != nil {
		p.failed = true
	}
	return m, err
}

// runEpisode plays one episode and records it. It never fails: an error
// becomes the row's Error, and the failKind says where it came from.
func runEpisode(ctx context.Context, o Options, e env.Env, sc env.Scenario, pol env.Policy, seed int64) (trajectory.Trajectory, failKind) {
	t := trajectory.Trajectory{
		Run: o.Run, Model: o.Model.Model, ScenarioID: sc.ID, Split: sc.Split, Env: e.Name(),
		CreatedAt: time.Now().UTC(), StartedAt: time.Now().UTC(),
		Metadata: map[string]string{"seed": strconv.FormatInt(seed, 10)},
	}
	if len(sc.Payload) > 0 {
		t.Payload = string(sc.Payload)
	}
	if name, ok := scriptedName(o.Policy, e); ok {
		t.Model = "scripted:" + name
	} else if o.templateKwargs != "" {
		t.Metadata[trajectory.MetadataKeyChatTemplateKwargs] = o.templateKwargs
	}
	epCtx := ctx
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		epCtx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	watched := &watchedPolicy{Policy: pol}
	// An environment's failure, not a stop or the episode's timeout,
	// which the model's calls may have spent; with no call made, the
	// environment spent it (a reset that never answered).
	envFailed := func() failKind {
		if ctx.Err() == nil && (epCtx.Err() == nil || watched.calls == 0) {
			return failEnv
		}
		return failOther
	}
	ep, err := e.NewEpisode(epCtx, sc, seed)
	if err != nil {
		t.Error = fmt.Sprintf("start episode: %v", err)
		t.FinishedAt = time.Now().UTC()
		return t, envFailed()
	}
	res, err := env.Play(epCtx, ep, watched, o.MaxTurns)
	if cerr := ep.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close episode: %w", cerr)
	}
	t.FinishedAt = time.Now().UTC()
	t.Messages, t.Tools = res.Messages, res.Tools
	t.Metrics = res.Outcome.Metrics
	for _, m := range t.Messages {
		if m.Role == "assistant" && m.AnswerModel != "" {
			t.Adapter = m.AnswerModel
			t.Step = stepOf(m.AnswerModel)
		}
	}
	if err != nil {
		if ctx.Err() == nil && errors.Is(epCtx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("episode timeout after %v: %w", o.Timeout, err)
		}
		t.Error = err.Error()
		switch {
		case ctx.Err() == nil && errors.Is(err, env.ErrContextFull):
			return t, failPromptFull
		case !watched.failed:
			return t, envFailed()
		case errors.Is(err, syscall.ECONNREFUSED):
			return t, failRefused
		case errors.As(err, new(*net.DNSError)):
			return t, failNoHost
		}
		return t, failOther
	}
	t.Reward = trajectory.Float64(res.Outcome.Reward)
	return t, failOther
}

// scriptedName is the scripted policy an episode of e plays, if any.
func scriptedName(policy string, e env.Env) (string, bool) {
	scripted, name, err := parsePolicy(policy)
	if err != nil || !scripted {
		return "", false
	}
	if s, ok := e.(env.Scripted); ok && name == "" && len(s.Policies()) > 0 {
		name = s.Policies()[0]
	}
	return name, true
}

// inEnv names the environment that failed to open. The packages behind
// the environments begin their errors with their name, the environment's
// ("tictactoe: opponent ..."), and naming it again read as two failures
// ("environment tictactoe: tictactoe: ...").
func inEnv(name string, err error) error {
	if strings.HasPrefix(err.Error(), name+": ") {
		return fmt.Errorf("environment %w", err)
	}
	return fmt.Errorf("environment %s: %w", name, err)
}

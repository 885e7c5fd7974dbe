package score

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/modelfolder"
	"github.com/hone-rl/hone/format/shard"
	"github.com/hone-rl/hone/format/tokenizer"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/format/urlmask"
	"github.com/hone-rl/hone/internal/flagval"
	"github.com/hone-rl/hone/internal/retry"
	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/score/formula"
	"github.com/hone-rl/hone/score/judge"
	"github.com/hone-rl/hone/score/judgecache"
	"github.com/hone-rl/hone/score/ruler"
)

// Summary counts what a run did.
type Summary struct {
	Groups, Rows int64 // read
	Scored       int64 // groups scored
	Passed       int64 // groups passed through by --only-missing
	Skipped      int64 // groups dropped by --on-judge-error skip
	Marked       int64 // groups marked by --on-judge-error mark
	Errored      int64 // groups written untouched: every row's episode failed
	Written      int64 // rows written
	ErroredRows  int64 // of them, rows whose episode failed: written unscored
	Judge        map[string]judge.Usage
	// Ruler counts the RULER prompts built and those cut to fit the
	// judge's context (--judge-context-tokens), over every ruler scorer.
	Ruler       ruler.CutCounts
	PricePrompt float64
	PriceCompl  float64
}

// ErrJudgeFailedAll is returned when the judge failed every group it was
// given (under --on-judge-error skip or mark, which otherwise let a run go
// on): the output is still complete and holds what could be written, but
// a run that scored nothing is a failure (exit 1), not a success.
var ErrJudgeFailedAll = errors.New("the judge failed every group it was given")

// Cost returns the judge cost in USD at the given prices.
func (s Summary) Cost() float64 {
	var c float64
	for _, u := range s.Judge {
		c += float64(u.PromptTokens)*s.PricePrompt/1e6 + float64(u.CompletionTokens)*s.PriceCompl/1e6
	}
	return c
}

// String is the one-line summary.
func (s Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d groups (%d rows) read: %d scored, %d passed through, %d skipped, %d marked",
		s.Groups, s.Rows, s.Scored, s.Passed, s.Skipped, s.Marked)
	if s.Errored > 0 {
		fmt.Fprintf(&b, ", %d with every row errored", s.Errored)
	}
	fmt.Fprintf(&b, "; %d rows written", s.Written)
	if s.ErroredRows > 0 {
		fmt.Fprintf(&b, ", %d of them errored in collection and passed through unscored", s.ErroredRows)
	}
	models := make([]string, 0, len(s.Judge))
	for m := range s.Judge {
		models = append(models, m)
	}
	slices.Sort(models)
	for _, m := range models {
		u := s.Judge[m]
		fmt.Fprintf(&b, "; judge %s: %d calls, %d cached, %d retries, %d prompt + %d completion tokens",
			m, u.Calls, u.CacheHits, u.Retries, u.PromptTokens, u.CompletionTokens)
	}
	if s.PricePrompt > 0 || s.PriceCompl > 0 {
		fmt.Fprintf(&b, ", $%.4f", s.Cost())
	}
	if s.Ruler.Cut > 0 {
		fmt.Fprintf(&b, "; ruler: %d of %d prompts cut to fit the judge's context (%d texts)", s.Ruler.Cut, s.Ruler.Prompts, s.Ruler.Texts)
	}
	return b.String()
}

// Run scores opts.Inputs into opts.Out and hands the counts to
// opts.Summary. When ctx ends before all groups were scored, the error
// wraps stageerr.ErrInterrupted; the output then holds every group
// finished before the stop, whole and in order, and is a complete Parquet
// file: the caller decides whether to keep it. So it is with
// ErrJudgeFailedAll, when the judge failed every group it was given. Bad options are
// stageerr.ErrUsage, bad input files stageerr.ErrBadInput.
func Run(ctx context.Context, opts Options) (runErr error) {
	sum := Summary{PricePrompt: opts.PricePrompt, PriceCompl: opts.PriceCompletion}
	var meter *judge.Meter
	if opts.Summary != nil {
		defer func() {
			if meter != nil {
				sum.Judge = meter.Usage()
			}
			opts.Summary(sum)
		}()
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := opts.validate(); err != nil {
		return err
	}
	// The judge cache's entries, one an object on an object store, are
	// read and written over one bucket for the whole run.
	files := fileset.NewPool()
	defer files.Close()
	chain, meter, err := buildChain(ctx, opts, log, files)
	if err != nil {
		return err
	}
	defer func() {
		sum.Ruler = rulerCounts(chain)
		// A failed run's error says what to fix; what the few groups
		// before it did (a cut, an identical group, a name unseen, a
		// group passed through) would only draw the eye from it, of an
		// output not kept. A stopped run, or one whose judge failed
		// every group, keeps its output, and the warnings hold for it.
		if runErr != nil && !errors.Is(runErr, stageerr.ErrInterrupted) && !errors.Is(runErr, ErrJudgeFailedAll) {
			return
		}
		logRulerCuts(sum.Ruler, opts, log)
		rulerIdentical(chain, log)
		formulaUnseen(chain, log)
		formulaMixed(chain, log)
		if n, g, spec := chain.PassedOther(); n > 0 {
			log.Warn("--only-missing passed through groups that another chain scored: their rows keep that chain's values, this chain was not applied to them (re-score without --only-missing to apply it)",
				"groups", n, "first", g, "its_chain", spec, "this_chain", chain.Spec)
		}
	}()
	r, err := trajectory.Open(ctx, opts.Inputs)
	if err != nil {
		return stageerr.Input(err)
	}
	defer r.Close()
	w := trajectory.NewWriter(opts.Out, trajectory.WriterOptions{Metadata: map[string]string{MetaChain: chain.Spec}})
	// The pipeline hands over only groups finished before any stop, and
	// after a stop those are still to be kept: the writes go on.
	wctx := context.WithoutCancel(ctx)
	err = pipeline(ctx, r, opts.Shard, chain, opts.Concurrency, &sum, func(g trajectory.Group) error {
		if err := w.WriteGroup(wctx, g); err != nil {
			return fmt.Errorf("write group %q: %w", g.ID, err)
		}
		sum.Written += int64(len(g.Trajectories))
		for i := range g.Trajectories {
			if EpisodeFailed(&g.Trajectories[i]) {
				sum.ErroredRows++
			}
		}
		if opts.Progress != nil {
			opts.Progress(sum.Scored+sum.Passed+sum.Marked+sum.Skipped+sum.Errored, sum.Written)
		}
		return nil
	})
	if err != nil && !errors.Is(err, stageerr.ErrInterrupted) {
		return err
	}
	if cerr := w.Close(); cerr != nil {
		return fmt.Errorf("write output: %w", cerr)
	}
	if err == nil && sum.Scored == 0 && sum.Skipped+sum.Marked > 0 {
		return fmt.Errorf("%w (%d skipped, %d marked under --on-judge-error %s; the log has each reason)",
			ErrJudgeFailedAll, sum.Skipped, sum.Marked, opts.OnJudgeError)
	}
	return err
}

// rulerCounts sums what the budget cut over the chain's ruler scorers.
// Each group's cuts are also logged at debug level.
func rulerCounts(c *Chain) ruler.CutCounts {
	var n ruler.CutCounts
	for _, s := range c.Scorers {
		if r, ok := s.(*ruler.Scorer); ok {
			k := r.Cuts()
			n.Prompts, n.Cut, n.Texts = n.Prompts+k.Prompts, n.Cut+k.Cut, n.Texts+k.Texts
		}
	}
	return n
}

// logRulerCuts logs n at info level, one line per run, when a ruler
// scorer built a prompt under a budget (--judge-context-tokens; without
// one nothing is cut).
func logRulerCuts(n ruler.CutCounts, opts Options, log *slog.Logger) {
	if n.Prompts > 0 && opts.promptBudget() > 0 {
		log.Info("ruler: prompts cut to fit the judge's context", "prompts", n.Prompts, "cut", n.Cut, "texts_cut", n.Texts,
			"budget_tokens", opts.promptBudget())
	}
}

// rulerIdentical logs, in one warning line for the run, the groups whose
// trajectories were all identical (each is logged at debug level as it is
// scored), naming the first few. Every ruler scorer of the chain sees the
// same groups: the count is one scorer's, not their sum.
func rulerIdentical(c *Chain, log *slog.Logger) {
	var n int64
	var first []string
	for _, s := range c.Scorers {
		if r, ok := s.(*ruler.Scorer); ok {
			if k, f := r.Identical(); k > n {
				n, first = k, f
			}
		}
	}
	if n > 0 {
		log.Warn("ruler: groups whose trajectories are all identical; the judge scored one of each on an absolute scale (--log-level debug lists them all)",
			"groups", n, "first", strings.Join(first, ","))
	}
}

// settleIdentical tells each ruler scorer of the chain that group id is
// done, in input order, for the ids its warning names (Scorer.Settle).
func settleIdentical(c *Chain, id string) {
	for _, s := range c.Scorers {
		if r, ok := s.(*ruler.Scorer); ok {
			r.Settle(id)
		}
	}
}

// formulaUnseen warns, once per name, of each name a formula read that no
// row it scored had: read under a guard (judeg ?? 0) such a name is nil,
// and a misspelt one gives the fallback on every row, where a read
// without one fails the row. A warning, not an error: a metric may be
// absent from one run's files and present in another's.
func formulaUnseen(c *Chain, log *slog.Logger) {
	for _, s := range c.Scorers {
		f, ok := s.(*formula.Scorer)
		if !ok {
			continue
		}
		for _, u := range f.Unseen() {
			args := []any{"scorer", f.Name(), "name", u.Name, "rows", u.Rows}
			if u.Closest != "" {
				args = append(args, "closest", u.Closest)
			}
			msg := "formula: a name it reads was on no row it scored; where guarded (?? or a nil test) it read as nil on each: check its spelling"
			if u.Tested {
				msg = "formula: a name it tests for (in) was on no row it scored; the test found it on no row, so each row went the way of its absence: check its spelling"
			}
			log.Warn(msg, append(args, "rows_have", u.Has)...)
		}
	}
}

// formulaMixed warns, once per name, of each bare name a formula read
// that was a component on some rows and a metric alone on others: the
// component shadows the metric where there is one, so the rows read two
// different things under one name.
func formulaMixed(c *Chain, log *slog.Logger) {
	for _, s := range c.Scorers {
		f, ok := s.(*formula.Scorer)
		if !ok {
			continue
		}
		for _, m := range f.Mixed() {
			log.Warn(fmt.Sprintf("formula: a name it reads bare was a component on some rows and a metric on others, and read the component where the row had one: write components[%q] or metrics[%q] to read one of them on every row", m.Name, m.Name),
				"scorer", f.Name(), "name", m.Name, "component_row", m.ComponentRow, "metric_row", m.MetricRow)
		}
	}
}

// buildChain turns the --scorer specs into a Chain. It returns the meter
// around the judge when the chain has a ruler scorer.
func buildChain(ctx context.Context, opts Options, log *slog.Logger, files *fileset.Pool) (*Chain, *judge.Meter, error) {
	var specs []Spec
	names := map[string]string{}
	for _, v := range opts.Scorers {
		s, err := ParseSpec(v)
		if err != nil {
			return nil, nil, err
		}
		if prev, dup := names[s.Name]; dup {
			if s.Kind == "env" {
				// env cannot be renamed: the environment's reward is one component.
				return nil, nil, stageerr.Usagef("--scorer %q and --scorer %q both write component %q: give the environment's reward once", prev, v, s.Name)
			}
			return nil, nil, stageerr.Usagef("--scorer %q and --scorer %q both write component %q; name one, e.g. NAME=formula:EXPR", prev, v, s.Name)
		}
		names[s.Name] = v
		specs = append(specs, s)
	}
	c := &Chain{OnJudgeErr: opts.OnJudgeError, OnlyMissing: opts.OnlyMissing, JudgeModel: opts.JudgeModel, Log: log}
	var meter *judge.Meter
	var budget ruler.Budget // one tokenizer for every ruler scorer
	var parts []string
	for _, s := range specs {
		parts = append(parts, s.String())
		switch s.Kind {
		case "env":
			c.Scorers = append(c.Scorers, EnvScorer{})
		case "formula":
			f, err := formula.New(s.Name, s.Arg)
			if err != nil {
				return nil, nil, stageerr.Usagef("--scorer %q: %w", s.String(), err)
			}
			c.Scorers = append(c.Scorers, f)
		case "ruler":
			if meter == nil {
				j, served, err := buildJudge(ctx, opts, log, files)
				if err != nil {
					return nil, nil, err
				}
				meter = &judge.Meter{Next: j}
				c.JudgeAnswered, c.JudgeServed = meter.Answered, served

				if budget, err = judgeBudget(opts); err != nil {
					return nil, nil, err
				}
			}
			rubric, err := readRubric(opts.RubricFile)
			if err != nil {
				return nil, nil, err
			}
			var temp *float64
			if !math.IsNaN(opts.JudgeTemperature) {
				temp = &opts.JudgeTemperature
			}
			c.Scorers = append(c.Scorers, &ruler.Scorer{Component: s.Name, Judge: meter, Model: opts.JudgeModel, Rubric: rubric, Temperature: temp, Budget: budget, Log: log})
			parts[len(parts)-1] += fmt.Sprintf("(model=%s,rubric=%s)", opts.JudgeModel, rubricLabel(opts.RubricFile))
		}
	}
	if err := checkOrder(c.Scorers, opts.Scorers); err != nil {
		return nil, nil, err
	}
	// A name the chain writes is a component on the rows it reaches
	// (env only where the reward was not null): bare, it reads no metric
	// on the rows that lack it.
	written := []string{ComponentEnv, ComponentPrevious}
	for _, s := range c.Scorers {
		written = append(written, s.Name())
	}
	for i, s := range c.Scorers {
		if f, ok := s.(*formula.Scorer); ok {
			f.ComponentNames(written...)
			f.Hide(unreadable(c.Scorers, i)...)
			f.ScoredKey(MetaChain)
		}
	}
	c.Spec = strings.Join(parts, " | ")
	return c, meter, nil
}

// unreadable returns the components the formula at scorers[i] may not
// read, which checkOrder refuses it by name: previous and those that it
// and the scorers after it write (but env, which Chain.score puts on the
// rows before any scorer runs). Read through the whole components map
// (values(components)), they were an earlier run's values on a row
// scored before.
func unreadable(scorers []Scorer, i int) []string {
	out := []string{ComponentPrevious}
	for _, s := range scorers[i:] {
		if s.Name() != ComponentEnv {
			out = append(out, s.Name())
		}
	}
	return out
}

// checkOrder refuses a formula that reads a component a later scorer of
// the chain, or the formula itself, writes (flags are the --scorer
// values, one per scorer). On a first scoring the name is absent and
// every row fails; on rows scored before, the formula would read the
// earlier run's value, stale beside the one this run writes. env is
// exempt: Chain.score puts it on the rows before any scorer runs.
// previous is refused wherever the formula stands: Chain.Apply writes it
// after every scorer, so no formula reads this run's.
func checkOrder(scorers []Scorer, flags []string) error {
	writer := make(map[string]int, len(scorers))
	for i, s := range scorers {
		writer[s.Name()] = i
	}
	for i, s := range scorers {
		f, ok := s.(*formula.Scorer)
		if !ok {
			continue
		}
		for _, name := range f.Components() {
			j, written := writer[name]
			switch {
			case name == ComponentPrevious:
				return stageerr.Usagef("--scorer %q reads component %q, which the chain writes after every scorer (the reward a row had before the run that changed it): absent on a row scored once, an earlier run's on one scored again (a metric of that name is metrics[%q])", flags[i], name, name)
			case !written || j < i || name == ComponentEnv:
			case j == i:
				return stageerr.Usagef("--scorer %q reads component %q, which it writes itself: on rows scored before it would read its own value from the earlier run (a metric of that name is metrics[%q])", flags[i], name, name)
			default:
				return stageerr.Usagef("--scorer %q reads component %q, which --scorer %q writes after it: on rows scored before it would read the earlier run's value; put the formula after it (a metric of that name is metrics[%q])", flags[i], name, flags[j], name)
			}
		}
	}
	return nil
}

// judgeBudget turns --judge-context-tokens and --judge-tokenizer into the
// ruler prompt's budget.
func judgeBudget(opts Options) (ruler.Budget, error) {
	b := ruler.Budget{Tokens: opts.promptBudget()}
	if opts.JudgeTokenizer != "" {
		tok, err := loadJudgeTokenizer(opts.JudgeTokenizer)
		if err != nil {
			return b, stageerr.Usagef("--judge-tokenizer: %w", err)
		}
		b.Counter = ruler.TokenizerCounter(tok)
	}
	return b, nil
}

// loadJudgeTokenizer reads the judge's tokenizer from its model folder (the
// folder, or the folder's tokenizer.json), through the folder's one opener;
// a tokenizer file of another name is parsed as it is.
func loadJudgeTokenizer(path string) (*tokenizer.Tokenizer, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	dir := path
	if !fi.IsDir() {
		if base := filepath.Base(path); base != modelfolder.TokenizerFile && base != modelfolder.TokenizerFile+".gz" {
			f, err := os.Open(path)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			tok, err := tokenizer.Parse(f)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			return tok, nil
		}
		dir = filepath.Dir(path)
	}
	folder, err := modelfolder.Open(dir, modelfolder.Tokenizer)
	if err != nil {
		return nil, err
	}
	defer folder.Close()
	return folder.Tokenizer, nil
}

func rubricLabel(path string) string {
	if path == "" {
		return "default"
	}
	return path
}

func readRubric(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", stageerr.Usagef("--rubric: %w", err)
	}
	if strings.TrimSpace(string(b)) == "" {
		return "", stageerr.Usagef("--rubric %s: the file is empty", path)
	}
	return string(b), nil
}

// buildJudge assembles Cache(Retry(OpenAI or opts.Judge)), the cache
// reading and writing through files. served lists the OpenAI judge's
// models (nil with opts.Judge), for Chain.JudgeServed.
func buildJudge(ctx context.Context, opts Options, log *slog.Logger, files *fileset.Pool) (j judge.Judge, served func(context.Context) string, err error) {
	if opts.JudgeModel == "" {
		return nil, nil, stageerr.Usagef("--scorer ruler needs --judge-model")
	}
	j = opts.Judge
	if j == nil {
		base, key := opts.JudgeBaseURL, opts.JudgeAPIKey
		// A base URL without its scheme (vLLM's "localhost:8000/v1") is
		// refused before any judge call: each call failed on the URL,
		// and the run ended exit 1 (or skipped every group).
		if base != "" {
			if err = flagval.BaseURL("--judge-base-url (or $OPENAI_BASE_URL)", base); err != nil {
				return nil, nil, stageerr.Usage(err)
			}
		}
		// The temperature goes in each request (ruler.Scorer), where the
		// cache's key sees it.
		oo := judge.OpenAIOptions{BaseURL: base, APIKey: key, Timeout: opts.JudgeTimeout, MaxTokens: opts.JudgeMaxTokens, ResponseFormat: opts.JudgeFormat,
			ExplanationMaxChars: opts.JudgeExplanationMax, ContextTokens: opts.JudgeContextTokens, Tokenizer: opts.JudgeTokenizer != ""}
		oj := judge.NewOpenAI(oo)
		j, served = oj, oj.Served
		shown := base
		if shown == "" {
			shown = judge.OpenAIBaseURL // where an empty base URL sends the calls
		}
		// Masked (urlmask.Shown): a password or token in the URL's userinfo
		// would be in every run's stderr.
		log.Info("judge", "model", opts.JudgeModel, "base_url", urlmask.Shown(shown), "api_key_set", key != "")
		if w := flagval.CredentialsNotSent("--judge-base-url (or $OPENAI_BASE_URL)", base, "--judge-api-key or $OPENAI_API_KEY"); w != "" {
			log.Warn("judge: " + w)
		}
		if key == "" && isOpenAI(shown) {
			// OpenAI answers every call 401 without one; said now, before
			// the first group waits for that answer.
			log.Warn("judge: no API key for api.openai.com: set $OPENAI_API_KEY or --judge-api-key, or --judge-base-url for a server of your own")
		}
	}
	backoff := opts.Backoff
	if backoff == nil {
		backoff = retry.Exponential(time.Second, 30*time.Second)
	}
	j = judge.Retry{Next: j, Attempts: opts.JudgeRetries + 1, Backoff: backoff}
	if !opts.NoCache {
		if opts.CacheDir == "" {
			return nil, nil, stageerr.Usagef("--judge-cache is empty (use --no-judge-cache to run without one)")
		}
		// Asked now, as -o's bucket is: in a bucket the store does not
		// have, every verdict's read and store failed with a warning of
		// its own while the run paid for each judge call, caching none.
		if err = fileset.CheckBucket(ctx, opts.CacheDir); err != nil {
			if errors.Is(err, fileset.ErrBadArgument) {
				return nil, nil, stageerr.Usagef("--judge-cache %w", err)
			}
			return nil, nil, fmt.Errorf("--judge-cache %s: %w", opts.CacheDir, err)
		}
		j = &judgecache.Cache{Dir: opts.CacheDir, Server: opts.JudgeBaseURL, Next: j, Log: log, Files: files}
	}
	return j, served, nil
}

// slot is one group on its way through the pipeline.
type slot struct {
	in      trajectory.Group
	where   string // the group's file and rows, for a bad-input error
	out     trajectory.Group
	outcome Outcome
	err     error
	done    chan struct{}
}

// pipeline reads groups in order, scores up to conc of them at once (an
// errgroup with that limit), and hands the results to write in input
// order. At most about 2·conc groups are held in memory at a time. When
// ctx ends, the groups finished before the first unfinished one are
// written and the result wraps stageerr.ErrInterrupted.
func pipeline(ctx context.Context, r *trajectory.Reader, sh shard.Shard, c *Chain, conc int, sum *Summary, write func(trajectory.Group) error) error {
	// The first failure cancels work, with itself as the cause, so judge
	// calls in flight stop.
	eg, work := errgroup.WithContext(ctx)
	eg.SetLimit(conc)
	order := make(chan *slot, conc) // the window: groups read but not yet written
	readErr := make(chan error, 1)
	go func() {
		defer close(order)
		for k := 0; ; k++ {
			g, err := r.Next(work)
			if err == io.EOF {
				readErr <- nil
				return
			}
			if err != nil {
				if work.Err() == nil {
					err = stageerr.Input(err)
				}
				readErr <- err
				return
			}
			if !sh.Owns(k) {
				continue // another shard's group
			}
			s := &slot{in: g, done: make(chan struct{})}
			if file, row, ok := r.Where(g.ID); ok {
				// An object without its bucket query, which names no
				// file and printed the store's address.
				s.where = fmt.Sprintf("%s: rows %d-%d", fileset.DisplayName(file), row, row+int64(len(g.Trajectories))-1)
				if len(g.Trajectories) == 1 {
					s.where = fmt.Sprintf("%s: row %d", fileset.DisplayName(file), row)
				}
			}
			eg.Go(func() error { // blocks while conc groups are being scored
				defer close(s.done)
				s.out, s.outcome, s.err = c.Apply(work, s.in)
				if errors.Is(s.err, stageerr.ErrBadInput) && s.where != "" {
					// Named here, not by the writer loop: the error
					// is also the cause that work ends with, which is
					// all an earlier group stopped by it reports.
					s.err = fmt.Errorf("%s: %w", s.where, s.err)
				}
				return s.err
			})
			// Always hand the slot over, even when work has ended: the
			// writer loop drains order until it is closed, and a slot
			// dropped here would lose the failure that ended work.
			order <- s
			if work.Err() != nil {
				readErr <- nil
				return
			}
		}
	}()
	var failure error
	for s := range order {
		<-s.done
		if failure != nil {
			continue // drain: let every started worker finish
		}
		if s.err != nil {
			// A worker stopped by another's failure reports only the
			// cancellation; the cause names the real failure.
			// A group's bad input names its file and rows (the worker
			// added them: the scorers name the group and trajectory).
			failure = s.err
			if !errors.Is(s.err, stageerr.ErrBadInput) && work.Err() != nil {
				failure = context.Cause(work)
			}
			continue
		}
		settleIdentical(c, s.in.ID)
		sum.Groups++
		sum.Rows += int64(len(s.in.Trajectories))
		switch s.outcome {
		case Scored:
			sum.Scored++
		case Passed:
			sum.Passed++
			c.notePassed(&s.out)
		case Skipped:
			sum.Skipped++
			continue
		case Marked:
			sum.Marked++
		case Errored:
			sum.Errored++
		}
		if err := write(s.out); err != nil {
			failure = err
			// Stop the reader and the workers: the output is lost anyway.
			eg.Go(func() error { return err })
		}
	}
	eg.Wait()
	rerr := <-readErr
	if ctx.Err() != nil {
		return fmt.Errorf("%w: stopped before all groups were scored, after %d groups: %w", stageerr.ErrInterrupted, sum.Groups, context.Cause(ctx))
	}
	if failure != nil {
		return failure
	}
	return rerr
}

// isOpenAI reports whether the base URL is OpenAI's own API, which
// answers every call without a key 401.
func isOpenAI(base string) bool {
	u, err := url.Parse(base)
	return err == nil && strings.EqualFold(u.Hostname(), "api.openai.com")
}

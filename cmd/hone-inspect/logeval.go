package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/train/checkpoint"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

type logEvalOptions struct {
	Run   string
	Step  int
	Split string
}

func (o *logEvalOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Run, "run", "", "the training run folder the episodes evaluate, e.g. adapters/rl (required)")
	fs.IntVar(&o.Step, "step", 0, "the step evaluated, 0 for the run's starting point; episodes answered by another step of the run are refused (default: the step of the adapter that answered, <run>@N, which every episode must share)")
	fs.StringVar(&o.Split, "split", "val", "the split's name, the prefix of the metrics: val, test, val-greedy, …")
}

func newLogEvalCmd(a *app) *cobra.Command {
	var opts logEvalOptions
	cmd := &cobra.Command{
		Use:   "log-eval --run DIR [--step N] [--split val] FILE|GLOB|DIR|-...",
		Short: "Record an eval split's results (val/reward, …) in a training run",
		Long: `log-eval reads the episodes that one step of a training run played on an
eval split (hone-collect --model RUN@N, greedy or sampled, on held-out
scenarios; scored by the environment or by hone-score) and records them
in the run folder's eval.jsonl at that step, as ART's model.log(...,
split="val") does:

  SPLIT/reward           mean reward of the episodes that did not fail
  SPLIT/reward_std_dev   their population standard deviation
  SPLIT/exception_rate   failed episodes (an error set) / all episodes
  SPLIT/episodes         episodes read
  SPLIT/METRIC           mean of each environment metric over the episodes
                         that did not fail and report it

Every episode given is counted, whatever split its row names; a warning
names rows of another split, and rows of none beside rows of SPLIT (a
scenario file's training scenarios: hone-collect --split val plays only
its val ones). Logging a split at a step again replaces what it had there.
The metrics go to stdout as one JSON object. hone-inspect report draws
them beside the training metrics, and hone-train --best-metric val/reward
picks the best step by them: log-eval moves OUT/RUN/best itself and
prunes as the run's --keep-last says (steps not yet evaluated are kept).
It takes the run folder's lock, waiting while hone-train trains. An
episode that did not fail must have a finite reward: unscored rows, and
rewards that are NaN or infinite, are refused (exit code 2).`,
		Example: `  hone-collect --env guess --split val --seed 800001 --groups 64 -G 1 --temperature 0 \
      --model rl@3 --base-url http://localhost:8000/v1 -o val/rl-3.parquet
  hone-inspect log-eval --run adapters/rl val/rl-3.parquet
  hone-inspect log-eval --run adapters/rl --step 3 --split test scored-test.parquet`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("step") {
				opts.Step = -1 // from the episodes
			}
			return runLogEval(cmd.Context(), a, opts, args)
		},
	}
	opts.AddFlags(cmd.Flags())
	return cmd
}

// checkLocalRun refuses a --run left out, or in an object store:
// eval.jsonl is written under the run's lock, which is a local file, and
// hone-train publishes its own folder's files over the store's, so the
// run's folder to write in is where it trains.
func checkLocalRun(run string) error {
	if run == "" {
		return cli.Usagef("--run DIR is required: the training run folder, e.g. adapters/rl")
	}
	if fileset.IsURL(run) {
		return cli.Usagef("--run %s: a run folder in an object store cannot take eval.jsonl; give the local folder hone-train trains it in (its --out-cache)", fileset.DisplayName(run))
	}
	return nil
}

func runLogEval(ctx context.Context, a *app, opts logEvalOptions, args []string) error {
	if opts.Step < -1 {
		return cli.Usagef("--step %d: want a step number, 0 or more", opts.Step)
	}
	if err := checkpoint.CheckSplit(opts.Split); err != nil {
		return cli.Usagef("--%v", err)
	}
	if err := checkLocalRun(opts.Run); err != nil {
		return err
	}
	run := &checkpoint.Run{Dir: opts.Run}
	last, ok, err := run.Latest()
	if err != nil {
		return cli.BadInput(err)
	}
	if !ok {
		return cli.BadInput(fmt.Errorf("%s is not a training run folder: it has no %s (give the folder hone-train writes, OUT/RUN)", opts.Run, runfolder.LatestName))
	}
	ev, metrics, err := aggregateEval(ctx, a, opts, args)
	if err != nil {
		return err
	}
	if ev.step > last {
		return cli.BadInput(fmt.Errorf("step %d is after the run's latest, %s: an eval belongs to a step the run has saved", ev.step, runfolder.StepName(last)))
	}
	warnEvalSplits(a, opts.Split, ev)
	unlock, err := run.LockWait(ctx, 200*time.Millisecond, func() {
		a.log.Info("waiting for the run's lock (hone-train is training it)", "run", opts.Run)
	})
	if err != nil {
		return err
	}
	defer unlock()
	// The options are read under the lock, from the latest step then: a
	// hone-train --resume that held the lock may have changed
	// --best-metric, --best-mode or --keep-last (and saved later steps),
	// and the prune below must follow them, not those read before.
	if last, _, err = run.Latest(); err != nil {
		return cli.BadInput(err)
	}
	cfg, err := readBestConfig(run, last)
	if err != nil {
		return err
	}
	if err := run.LogEval(ev.step, opts.Split, metrics); err != nil {
		return err
	}
	attrs := []any{"run", opts.Run, "step", ev.step, "split", opts.Split, "episodes", ev.episodes, "reward", metrics["reward"]}
	if split, name, ok := strings.Cut(cfg.BestMetric, "/"); ok && split == opts.Split {
		if _, has := metrics[name]; !has {
			// hone-train checks --best-metric against its inputs where it
			// can; this is where a name it could not check shows up.
			logged := slices.Sorted(maps.Keys(metrics))
			for i, k := range logged {
				logged[i] = opts.Split + "/" + k
			}
			a.log.Warn("the run's --best-metric is not among the metrics of the split logged: no step can be best by it",
				"best_metric", cfg.BestMetric, "logged", strings.Join(logged, ","))
		}
	}
	if cfg.BestMetric != "" {
		if err := run.Prune(cfg.KeepLast, cfg.BestMetric, cfg.BestMode != "min"); err != nil {
			return err
		}
		if b, ok, err := run.Best(); err != nil {
			return err
		} else if ok {
			attrs = append(attrs, "best_metric", cfg.BestMetric, "best_step", b)
		}
	}
	if ev.step > 0 {
		if _, err := os.Stat(run.StepDir(ev.step)); err != nil {
			a.log.Warn("the evaluated step's folder is gone (pruned): it is recorded but cannot be best", "step", ev.step)
		}
	}
	a.log.Info("eval logged", attrs...)
	row := map[string]float64{"step": float64(ev.step)}
	for k, v := range metrics {
		row[opts.Split+"/"+k] = v
	}
	b, err := json.Marshal(row)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.stdout, "%s\n", b)
	return err
}

// aggregateEval reads the episodes of the input files args into the
// eval of opts.Step and returns it with its metrics.
func aggregateEval(ctx context.Context, a *app, opts logEvalOptions, args []string) (*evalAgg, map[string]float64, error) {
	r, err := a.openInputs(ctx, args)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	a.warnRepeated("log-eval", r.set) // its eval metrics count the file once
	// The run is named after its folder, as hone-serve names it; the
	// absolute path names it for --run . or --run .. too.
	abs, err := filepath.Abs(opts.Run)
	if err != nil {
		return nil, nil, fmt.Errorf("--run %s: %w", opts.Run, err)
	}
	ev := &evalAgg{runName: filepath.Base(abs), step: opts.Step}
	for {
		g, err := r.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, classify(err)
		}
		file, row, _ := r.Where(g.ID)
		if err := ev.add(g, opts.Split, file, row); err != nil {
			return nil, nil, cli.BadInput(err)
		}
	}
	metrics, err := ev.metrics()
	if err != nil {
		return nil, nil, cli.BadInput(err)
	}
	return ev, metrics, nil
}

// warnEvalSplits warns of episodes in ev that may not be held out: of
// another split than the one logged, or of none beside it.
func warnEvalSplits(a *app, split string, ev *evalAgg) {
	if ev.otherSplit != "" {
		a.log.Warn("episodes labelled with another split: check that they are held out (hone-collect --split val, with a --seed of its own)",
			"split", split, "rows_split", ev.otherSplit, "rows", ev.otherCount)
	}
	if ev.inSplit > 0 && ev.unlabelled > 0 {
		a.log.Warn("episodes without a split beside episodes of the split logged: hone-train trains unlabelled rows, so they are not held out (hone-collect --split val plays only a scenario file's val scenarios)",
			"split", split, "rows_split", "none", "rows", ev.unlabelled)
	}
}

// bestConfig is what log-eval needs of the run's saved options.
type bestConfig struct {
	BestMetric string `json:"best_metric"`
	BestMode   string `json:"best_mode"`
	KeepLast   int    `json:"keep_last"`
}

// readBestConfig reads --best-metric, --best-mode and --keep-last from the
// train_config.json of step last.
func readBestConfig(run *checkpoint.Run, last int) (bestConfig, error) {
	var c bestConfig
	b, err := run.ReadConfig(last)
	if err != nil {
		return c, cli.BadInput(err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, cli.BadInput(fmt.Errorf("%s: %w", filepath.Join(run.StepDir(last), checkpoint.ConfigName), err))
	}
	return c, nil
}

// evalAgg sums an eval split's episodes.
type evalAgg struct {
	runName string
	step    int // -1 until known
	// stepFrom says which row set step, for the message when rows disagree.
	stepFrom   string
	episodes   int
	failed     int
	rewards    []float64
	metricVals map[string][]float64 // each environment metric's values
	otherSplit string               // a split rows carry other than the one logged
	otherCount int
	// Rows of the logged split and rows of none: apart, either is an eval
	// (a proxy's rows carry no split); together, the unlabelled ones are
	// training scenarios played beside the held-out ones.
	inSplit, unlabelled int
}

// add counts the episodes of group g, whose first row is row of file:
// its errors name the file and row of the episode, as the reader's do.
func (e *evalAgg) add(g trajectory.Group, split, file string, row int64) error {
	for i := range g.Trajectories {
		t := &g.Trajectories[i]
		where := fmt.Sprintf("%s row %d (group %s, trajectory %s)", file, row+int64(i), g.ID, t.ID)
		e.episodes++
		switch t.Split {
		case split:
			e.inSplit++
		case "":
			e.unlabelled++
		default:
			e.otherSplit, e.otherCount = t.Split, e.otherCount+1
		}
		if t.Error != "" {
			e.failed++
			continue
		}
		if err := e.placeStep(t, where); err != nil {
			return err
		}
		if t.Reward == nil {
			return fmt.Errorf("%s: no reward: score the episodes first (hone-score --scorer env, or another scorer)", where)
		}
		// One NaN or infinite reward would make the split's mean one too,
		// which eval.jsonl cannot hold; name the episode, as for a metric.
		if r := *t.Reward; math.IsNaN(r) || math.IsInf(r, 0) {
			return fmt.Errorf("%s: reward is %v, not a finite number: score the episodes again (hone-score refuses such rewards)", where, r)
		}
		e.rewards = append(e.rewards, *t.Reward)
		for k, v := range t.Metrics {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("%s: metric %q is %v", where, k, v)
			}
			if e.metricVals == nil {
				e.metricVals = map[string][]float64{}
			}
			e.metricVals[k] = append(e.metricVals[k], v)
		}
	}
	return nil
}

// placeStep takes the step from the adapter that answered t, unless --step
// gave it, and checks that every episode agrees. --step places rows that
// name no step of the run (the base model's, a name of the server's own),
// but not rows that name another one: those were recorded, best moved and
// steps were pruned by episodes of a step they did not evaluate.
func (e *evalAgg) placeStep(t *trajectory.Trajectory, where string) error {
	served, err := runfolder.ParseServed(t.Adapter)
	if e.step >= 0 && e.stepFrom == "" { // --step
		if err == nil && served.HasStep && served.Run == e.runName && served.Step != e.step {
			return fmt.Errorf("%s: answered by %q, step %d of run %s, not by the step --step %d names: log it without --step, or with --step %d",
				where, t.Adapter, served.Step, e.runName, e.step, served.Step)
		}
		return nil
	}
	if err != nil || !served.HasStep || served.Run != e.runName {
		return fmt.Errorf("%s: answered by %q, not by a step of run %s (a name such as %s): pass --step N to say which step these episodes evaluate (--step 0: the run's starting point, the base model's episodes)",
			where, t.Adapter, e.runName, runfolder.ServedName(e.runName, 1))
	}
	if e.step < 0 {
		e.step, e.stepFrom = served.Step, where
		return nil
	}
	if served.Step != e.step {
		return fmt.Errorf("%s: answered by step %d, but %s by step %d: log each step's episodes on their own", where, served.Step, e.stepFrom, e.step)
	}
	return nil
}

// metrics are the split's metrics, without the split prefix.
func (e *evalAgg) metrics() (map[string]float64, error) {
	if e.episodes == 0 {
		return nil, fmt.Errorf("no episodes in the inputs")
	}
	if len(e.rewards) == 0 && e.episodes == 1 {
		return nil, fmt.Errorf("the only episode failed: nothing to evaluate (see its error with hone-inspect stats)")
	}
	if len(e.rewards) == 0 {
		return nil, fmt.Errorf("every one of the %d episodes failed: nothing to evaluate (see their errors with hone-inspect stats)", e.episodes)
	}
	if e.step < 0 {
		return nil, fmt.Errorf("no episode says which step it evaluates: pass --step N")
	}
	mean, sd := meanStd(e.rewards)
	m := map[string]float64{
		"reward":         mean,
		"reward_std_dev": sd,
		"exception_rate": float64(e.failed) / float64(e.episodes),
		"episodes":       float64(e.episodes),
	}
	reserved := checkpoint.EvalMetrics()
	for _, k := range slices.Sorted(maps.Keys(e.metricVals)) {
		if slices.Contains(reserved, k) {
			return nil, fmt.Errorf("the environment metric %q has the name of one log-eval computes (%v): rename it in the environment", k, reserved)
		}
		m[k], _ = meanStd(e.metricVals[k])
	}
	return m, nil
}

// meanStd returns the mean and population standard deviation of the
// finite xs (at least one), summed scaled by the power of two of the
// largest magnitude: unscaled, rewards near 1e308 summed to +Inf, which
// eval.jsonl cannot hold. A power of two scales exactly, so rewards of
// ordinary size come out as a plain sum gives them.
func meanStd(xs []float64) (mean, sd float64) {
	big := 0.0
	for _, x := range xs {
		big = math.Max(big, math.Abs(x))
	}
	if big == 0 {
		return 0, 0
	}
	_, e := math.Frexp(big)
	n := float64(len(xs))
	for _, x := range xs {
		mean += math.Ldexp(x, -e)
	}
	mean /= n
	ss := 0.0
	for _, x := range xs {
		d := math.Ldexp(x, -e) - mean
		ss += d * d
	}
	return math.Ldexp(mean, e), math.Ldexp(math.Sqrt(ss/n), e)
}

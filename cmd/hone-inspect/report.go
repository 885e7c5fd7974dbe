package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/internal/report"
	"github.com/hone-rl/hone/train/checkpoint"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

type reportOptions struct {
	Output       string
	Evals        []string
	Trajectories []string
	Run          string
}

func (o *reportOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.Output, "output", "o", "report.html", "write the page to PATH (atomically), or - for stdout")
	fs.StringArrayVar(&o.Evals, "eval", nil, "eval file or glob to plot (repeatable; format above)")
	fs.StringArrayVar(&o.Trajectories, "trajectories", nil, "trajectory Parquet file, glob or directory whose episodes to plot and show (repeatable)")
	fs.StringVar(&o.Run, "run", "", "run name shown on the page, with one RUN_DIR (default: the run folder's name)")
}

func newReportCmd(a *app) *cobra.Command {
	var opts reportOptions
	cmd := &cobra.Command{
		Use:   "report [flags] RUN_DIR|METRICS.jsonl...",
		Short: "Render training runs as one HTML page of charts",
		Long: `report reads training run folders written by hone-train (adapters/<run>/,
whose metrics.jsonl holds one JSON object per step) and writes one
self-contained HTML page that works offline: a summary, the run's
hyperparameters (train_config.json of its latest step), and charts of
reward, loss, KL, entropy, gradient norm, clip fraction, learning rate and
every other numeric metric, and the eval splits hone-inspect log-eval
recorded in the run folder's eval.jsonl (val/reward, …), with the best
step by the run's --best-metric. Charts are drawn by the page itself: choose the
x axis (step, training time, tokens, wall time: the rows' "time", which
counts the time between steps too), smooth noisy lines, hover for values.
Series that never change (KL 0 with beta 0, a constant learning rate) are
folded into one line under their section. Several RUN_DIRs are overlaid,
one colour a run.

--trajectories adds what the episodes say, per step: the reward
distribution, each reward component, each environment metric, completion
length, and a table of sample rollouts (the best and the worst episode of
the group whose rewards spread widest). A file that the run's manifest.json
lists (consumed by hone-train --watch-dir, or named to a finished grpo session)
is drawn at the step that trained on it; hover a point to see which adapter
sampled it.

--eval FILE adds eval results: JSON objects, one a line or pretty-printed
one after another (as jq writes them), or arrays of them:
  {"label":"after-grpo","step":40,"accuracy":0.62,"mean_reward":0.41}
"label" (required) names what was evaluated, "step" (optional integer,
default 0) places it on the step axis, "run" (optional) names the run whose
time and token axes place it (the first run's when it names none on the
page, which the page notes). Every other numeric key is a metric with a
chart of one line per label, except the settings temperature, top_p,
max_tokens, episodes and seed, which the eval table shows with the string
values.`,
		Example: `  hone-inspect report adapters/r1 -o r1.html
  hone-inspect report out/demo/adapters/rl --trajectories out/demo/scored \
      --eval 'out/demo/eval/*.json' -o rl.html
  hone-inspect report adapters/lr-1e-3 adapters/lr-3e-3 -o compare.html`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(cmd.Context(), a, opts, args)
		},
	}
	opts.AddFlags(cmd.Flags())
	return cmd
}

func runReport(ctx context.Context, a *app, opts reportOptions, args []string) error {
	if opts.Run != "" && len(args) > 1 {
		return cli.Usagef("--run names the run of one RUN_DIR; with %d, each is named after its folder", len(args))
	}
	var in report.Input
	var manifests []runManifest
	for _, arg := range args {
		dir, as, done, err := localRun(ctx, arg)
		if err != nil {
			return err
		}
		run, man, sources, err := readRun(ctx, dir)
		done()
		if err != nil {
			return as.err(err)
		}
		for i := range sources {
			sources[i] = as.path(sources[i])
		}
		if opts.Run != "" {
			run.Name = opts.Run
		}
		in.Runs = append(in.Runs, run)
		manifests = append(manifests, runManifest{run.Name, man})
		in.Sources = append(in.Sources, sources...)
	}
	shown := make([]string, len(args))
	for i, a := range args {
		shown[i] = fileset.DisplayName(a)
	}
	nameApart(in.Runs, shown)
	for i := range manifests {
		manifests[i].run = in.Runs[i].Name
	}
	evals, err := a.evalFiles(ctx, opts.Evals)
	if err != nil {
		return err
	}
	for _, p := range evals {
		rows, err := readFile(ctx, p, func(r io.Reader) ([]report.EvalRow, error) { return report.ReadEval(r, p) })
		if err != nil {
			return err
		}
		in.Evals = append(in.Evals, rows...)
		in.Sources = append(in.Sources, p)
	}
	if len(opts.Trajectories) > 0 {
		if err := a.readTrajectories(ctx, &in, opts.Trajectories, manifests); err != nil {
			return err
		}
	}
	pg, err := report.Build(ctx, in)
	if err != nil {
		return err
	}
	if err := cli.WriteOutput(ctx, opts.Output, a.stdout, false, pg.WriteHTML); err != nil {
		return err
	}
	if opts.Output != "-" {
		n := 0
		for _, s := range pg.Sections {
			n += len(s.Charts)
		}
		a.log.Info("report written", "path", opts.Output, "charts", n, "runs", len(in.Runs))
	}
	return nil
}

// runManifest is the manifest.json of a run: which trajectory files it
// trained on, at which step.
type runManifest struct {
	run     string
	trained []checkpoint.FileEntry
}

// trainedFiles lists the files a run trained on, each with the step after
// the session that trained it: those --watch-dir consumed, then those named
// to each finished session (README's round by hand names each round's
// file), which the manifest keeps apart. The first entry of a file is the
// step that first trained on it. A session is listed before it trains,
// with the last step it is to reach: one whose end the run has not
// reached (reached: its highest step saved or in its metrics) is still
// training or was killed, and its files are left out, as a --watch-dir
// session's pending files are.
func trainedFiles(man checkpoint.Manifest, reached int) []checkpoint.FileEntry {
	out := slices.Clone(man.Consumed)
	for _, s := range man.Sessions {
		if s.EndStep > reached {
			continue
		}
		for _, f := range s.Files {
			f.Step = s.EndStep
			out = append(out, f)
		}
	}
	return out
}

// localRun is the run folder arg on this machine: a path as it is, a
// file:// URL's path, or a run that hone-train published to an object
// store (--out s3://…) pulled into a temporary folder, without its steps'
// weights and optimizer state, which done removes; as names that folder's
// files by arg. report reads a run by its files (checkpoint.Run), which
// are local.
func localRun(ctx context.Context, arg string) (dir string, as pulledAs, done func(), err error) {
	if !fileset.IsURL(arg) {
		if strings.HasPrefix(arg, "file:") {
			p, err := fileset.LocalPath(arg)
			return p, as, func() {}, cli.BadInput(err)
		}
		return arg, as, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "hone-report-*")
	if err != nil {
		return "", as, nil, err
	}
	done = func() { os.RemoveAll(tmp) }
	name := strings.TrimSuffix(fileset.DisplayName(arg), "/")
	dir = filepath.Join(tmp, path.Base(name))
	steps, err := runfolder.Pull(ctx, arg, dir, runfolder.PullOptions{Skip: func(f string) bool { return f != checkpoint.ConfigName }})
	if errors.Is(err, fileset.ErrNoBucket) || (err == nil && len(steps) == 0) {
		// A misspelt bucket is said as such, bad input (Pull's error is
		// the store's read of latest), in CheckBucket's words, which show
		// where it asked with the password masked; a bucket that is there
		// and no latest in it is a run not published.
		if berr := fileset.CheckBucket(ctx, arg); berr != nil {
			err = cli.BadInput(berr)
		} else if err == nil {
			err = cli.BadInputf("%s holds no published run: no %s names a step there", name, runfolder.LatestName)
		}
	}
	if err != nil {
		done()
		return "", as, nil, err
	}
	return dir, pulledAs{dir: dir, url: name}, done, nil
}

// pulledAs names the files of a run pulled into the temporary folder dir
// by url, the run's URL as the user gave it (without its bucket query):
// that folder, never named by the user, is gone once report exits, and an
// error or the page's list of files read naming it pointed nowhere. The
// zero pulledAs, of a local run, leaves names as they are.
type pulledAs struct{ dir, url string }

// path is p, a file of the pulled folder, named under url.
func (a pulledAs) path(p string) string {
	if a.dir == "" {
		return p
	}
	rel, err := filepath.Rel(a.dir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return p
	}
	return a.url + "/" + filepath.ToSlash(rel)
}

// err is err with the pulled folder named as url in its text; it still
// matches what it wraps (an exit code's class, fs.ErrNotExist).
func (a pulledAs) err(err error) error {
	if a.dir == "" || err == nil {
		return err
	}
	return &pulledErr{err: err, dir: a.dir, url: a.url}
}

// pulledErr is an error naming a pulled run's files by its URL (pulledAs).
type pulledErr struct {
	err      error
	dir, url string
}

func (e *pulledErr) Error() string {
	return strings.ReplaceAll(e.err.Error(), e.dir, e.url)
}

func (e *pulledErr) Unwrap() error { return e.err }

// readRun reads a run folder (or its metrics.jsonl named directly): the
// metrics, the hyperparameters of its latest step, and its manifest.
func readRun(ctx context.Context, arg string) (report.RunInput, []checkpoint.FileEntry, []string, error) {
	var run report.RunInput
	metricsPath := arg
	st, err := os.Stat(arg)
	if err != nil {
		return run, nil, nil, cli.BadInput(err)
	}
	if st.IsDir() {
		metricsPath = filepath.Join(arg, runfolder.MetricsName)
		if _, err := os.Stat(metricsPath); errors.Is(err, fs.ErrNotExist) {
			if runs := trainedRuns(arg); len(runs) > 0 {
				return run, nil, nil, cli.BadInputf("%s is a folder of runs (hone-train's --out), not a run folder: report one or more of its runs: %s", arg, strings.Join(runs, " "))
			}
			return run, nil, nil, cli.BadInputf("%s does not exist: no step has been trained in %s yet (hone-train writes a line of it per step)", metricsPath, arg)
		}
	}
	dir := filepath.Dir(metricsPath)
	run.Name = filepath.Base(dir)
	if run.Metrics, err = readFile(ctx, metricsPath, func(r io.Reader) (*report.Metrics, error) {
		return report.ReadMetrics(r, metricsPath)
	}); err != nil {
		return run, nil, nil, err
	}
	sources := []string{metricsPath}
	evalPath := filepath.Join(dir, runfolder.EvalName)
	if _, err := os.Stat(evalPath); err == nil {
		if run.Splits, err = readFile(ctx, evalPath, func(r io.Reader) (*report.Metrics, error) {
			return report.ReadMetrics(r, evalPath)
		}); err != nil {
			return run, nil, nil, err
		}
		sources = append(sources, evalPath)
	}
	ck := &checkpoint.Run{Dir: dir}
	step, ok, err := ck.Latest()
	if err != nil {
		return run, nil, nil, cli.BadInput(err)
	}
	saved, err := ck.Steps()
	if err != nil {
		return run, nil, nil, cli.BadInput(err)
	}
	for _, s := range saved {
		run.Saved = append(run.Saved, float64(s))
	}
	if ok {
		b, err := ck.ReadConfig(step)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// A step written before train_config.json existed.
		case err != nil:
			return run, nil, nil, err
		default:
			cfgPath := filepath.Join(ck.StepDir(step), checkpoint.ConfigName)
			if run.Config, err = report.FlattenConfig(b, cfgPath); err != nil {
				return run, nil, nil, cli.BadInput(err)
			}
			run.ConfigStep = step
			sources = append(sources, cfgPath)
		}
	}
	man, err := ck.ReadManifest()
	if err != nil {
		return run, nil, nil, cli.BadInput(err)
	}
	reached := step
	for _, s := range saved {
		reached = max(reached, s)
	}
	for _, s := range run.Metrics.Steps {
		reached = max(reached, int(s))
	}
	return run, trainedFiles(man, reached), sources, nil
}

// trainedRuns lists the run folders inside dir that have metrics to
// report, when dir is hone-train's --out folder rather than a run: those
// are what the user meant. Nothing is listed where dir cannot be read.
func trainedRuns(dir string) []string {
	names, err := runfolder.Runs(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range names {
		p := filepath.Join(dir, n)
		if _, err := os.Stat(filepath.Join(p, runfolder.MetricsName)); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// nameApart renames runs that share a folder name ("a/adapters/rl" and
// "b/adapters/rl") after the path they were given by.
func nameApart(runs []report.RunInput, args []string) {
	count := map[string]int{}
	for _, r := range runs {
		count[r.Name]++
	}
	for i := range runs {
		if count[runs[i].Name] > 1 {
			runs[i].Name = filepath.ToSlash(filepath.Clean(args[i]))
		}
	}
}

// evalFiles resolves the --eval arguments by the rule of every input
// (fileset): a file as named, a glob, or the *.json files of a folder. A
// file named twice is read once, and said so (warnRepeated): the eval
// table would otherwise look like the file's own.
func (a *app) evalFiles(ctx context.Context, args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, nil
	}
	set, err := cli.ResolveInputs(ctx, args, fileset.Options{Ext: ".json", Sequential: true})
	if err != nil {
		return nil, err
	}
	defer set.Close()
	a.warnRepeated("report", set)
	return set.Names(), nil
}

// readTrajectories reads the trajectory files into in, each placed at the
// step of the run whose manifest lists it (matched by size and checksum,
// so a file is found wherever the report runs from). A file named twice
// is read once, and said so (warnRepeated).
func (a *app) readTrajectories(ctx context.Context, in *report.Input, args []string, manifests []runManifest) error {
	set, err := cli.ResolveInputs(ctx, args, fileset.Options{Stdin: a.stdin})
	if err != nil {
		return err
	}
	defer set.Close()
	a.warnRepeated("report", set)
	paths := set.Names()
	var files []report.TrajFile
	for i, p := range paths {
		f := report.TrajFile{Path: p, Open: func(ctx context.Context) (*fileset.File, error) { return set.Open(ctx, i) }}
		if p != fileset.Stdin {
			if err := trainedBy(ctx, &f, manifests); err != nil {
				return err
			}
		}
		files = append(files, f)
	}
	names := make([]string, len(in.Runs))
	for i, r := range in.Runs {
		names[i] = r.Name
	}
	if in.Trajectories, err = report.ReadTrajectories(ctx, files, names); err != nil {
		return classify(err)
	}
	in.Sources = append(in.Sources, paths...)
	return nil
}

// trainedBy sets the run and step that trained on f, if a manifest lists it.
// f is opened, and hashed, as its input set opens it, so that a URL
// (file://, s3://) is matched as a path is, and a pipe (bash's <(…)) by
// the set's copy of it: read anew, a pipe the set had read to its end
// hashed as empty, and its episodes were placed at no step.
func trainedBy(ctx context.Context, f *report.TrajFile, manifests []runManifest) error {
	file, err := f.Open(ctx)
	if err != nil {
		return cli.BadInput(err)
	}
	defer file.Close()
	var sum string
	for _, m := range manifests {
		for _, e := range m.trained {
			if e.Size != file.Size || e.Step == 0 {
				continue
			}
			if sum == "" {
				h := sha256.New()
				if _, err := io.Copy(h, file.Reader()); err != nil {
					return fmt.Errorf("hash %s: %w", f.Path, err)
				}
				sum = hex.EncodeToString(h.Sum(nil))
			}
			if e.SHA256 == sum {
				f.Run, f.Step = m.run, e.Step
				return nil
			}
		}
	}
	return nil
}

// readFile opens path as every input is opened (a path, or a file:// or
// object-store URL) and parses it; a missing file or a parse error is bad
// input (exit 2), a failing disk is not.
func readFile[T any](ctx context.Context, path string, parse func(io.Reader) (T, error)) (T, error) {
	var zero T
	f, err := fileset.Open(ctx, path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fileset.ErrBadArgument) {
			return zero, cli.BadInput(err)
		}
		return zero, err
	}
	defer f.Close()
	v, err := parse(f.Reader())
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return zero, fmt.Errorf("read %s: %w", path, err)
		}
		return zero, cli.BadInput(err)
	}
	return v, nil
}

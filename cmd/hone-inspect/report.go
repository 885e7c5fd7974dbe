package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/internal/report"
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
	fs.StringArrayVar(&o.Evals, "eval", nil, "eval JSONL file to plot (repeatable; see below)")
	fs.StringArrayVar(&o.Trajectories, "trajectories", nil, "trajectory Parquet file, glob or directory whose rewards to plot per step (repeatable)")
	fs.StringVar(&o.Run, "run", "", "run name shown on the page (default: the run folder's name)")
}

func newReportCmd(a *app) *cobra.Command {
	var opts reportOptions
	cmd := &cobra.Command{
		Use:   "report [flags] RUN_DIR|METRICS.jsonl",
		Short: "Render a training run as one HTML page of plots",
		Long: `report reads a training run folder written by hone-train (adapters/<run>/,
whose metrics.jsonl holds one JSON object per step) and writes one
self-contained HTML page: a summary table (steps, first and last reward
mean, best step, total tokens, wall time) and PNG plots of reward, loss, KL,
entropy, gradient norm, clip fraction, learning rate and every other
numeric metric over steps. Images are embedded, so the page is one file.

--eval FILE adds eval results, one JSON object per line:
  {"label":"after-grpo","step":40,"accuracy":0.62,"mean_reward":0.41}
"label" (required) names what was evaluated, "step" (optional integer,
default 0) places it on the step axis, and every other numeric key is a
metric; each metric gets one plot with one line per label.

--trajectories adds the reward mean ± std per step computed from the
trajectory files themselves, beside the trainer's reward_mean.`,
		Example: `  hone-inspect report adapters/r1 -o r1.html
  hone-inspect report adapters/r1 --eval eval.jsonl --trajectories 'runs/r1/*.scored.parquet' -o r1.html`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(cmd.Context(), a, opts, args[0])
		},
	}
	opts.AddFlags(cmd.Flags())
	return cmd
}

func runReport(ctx context.Context, a *app, opts reportOptions, runArg string) error {
	metricsPath := runArg
	st, err := os.Stat(runArg)
	if err != nil {
		return cli.BadInput(err)
	}
	if st.IsDir() {
		metricsPath = filepath.Join(runArg, runfolder.MetricsName)
	}
	run := opts.Run
	if run == "" {
		run = filepath.Base(filepath.Dir(metricsPath))
	}
	in := report.Input{Run: run}
	if in.Metrics, err = readFile(metricsPath, func(r io.Reader) (*report.Metrics, error) {
		return report.ReadMetrics(r, metricsPath)
	}); err != nil {
		return err
	}
	in.Sources = append(in.Sources, metricsPath)
	for _, p := range opts.Evals {
		rows, err := readFile(p, func(r io.Reader) ([]report.EvalRow, error) { return report.ReadEval(r, p) })
		if err != nil {
			return err
		}
		in.Evals = append(in.Evals, rows...)
		in.Sources = append(in.Sources, p)
	}
	if len(opts.Trajectories) > 0 {
		set, err := cli.ResolveInputs(ctx, opts.Trajectories, fileset.Options{Stdin: a.stdin})
		if err != nil {
			return err
		}
		defer set.Close()
		if in.Trajectories, err = report.TrajectoryRewards(ctx, set); err != nil {
			return classify(err)
		}
		in.Sources = append(in.Sources, set.Names()...)
	}
	pg, err := report.Build(ctx, in)
	if err != nil {
		return err
	}
	if err := cli.WriteOutput(opts.Output, a.stdout, false, pg.WriteHTML); err != nil {
		return err
	}
	n := 0
	for _, s := range pg.Sections {
		n += len(s.Figures)
	}
	if opts.Output != "-" {
		a.log.Info("report written", "path", opts.Output, "plots", n, "steps", pg.Summary.Rows)
	}
	return nil
}

// readFile opens path and parses it; a missing file or a parse error is bad
// input (exit 2), a failing disk is not.
func readFile[T any](path string, parse func(io.Reader) (T, error)) (T, error) {
	var zero T
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return zero, cli.BadInput(err)
		}
		return zero, err
	}
	defer f.Close()
	v, err := parse(f)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return zero, fmt.Errorf("read %s: %w", path, err)
		}
		return zero, cli.BadInput(err)
	}
	return v, nil
}

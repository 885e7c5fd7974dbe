package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

type statsOptions struct {
	JSON bool
}

func (o *statsOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.JSON, "json", false, "print the statistics as one JSON object")
}

func newStatsCmd(a *app) *cobra.Command {
	var opts statsOptions
	cmd := &cobra.Command{
		Use:   "stats [flags] FILE|GLOB|DIR|-...",
		Short: "Summarize trajectory files: groups, tokens, rewards, errors",
		Long: `stats counts files, groups, trajectories, additional histories (schema
version 2), messages, trainable turns, sampled tokens and failed episodes,
and summarizes rewards (scored and unscored count, mean, sample standard
deviation, min, max) in total, per model that served the episodes and per
environment. A "model" line is one adapter's step, "rl@12" (sorted by run,
then by the step in the name; rows whose own step differs, such as rows
imported with step 0, are a line "rl@12 step 0" beside it), or a base
model's served name with its step, or "(none)" with
the step where no turn named a model (a scripted policy). With --json,
by_adapter holds those lines ("adapter", "step"), and by_step the same
figures per step number alone, two runs' step 1 added up. Messages,
trainable turns and tokens are those of every history of a trajectory, the
main one and the additional ones. A NaN reward counts as unscored, as
hone-train takes it; an infinite one is averaged, and with --json a figure
that is not finite is the string "+Inf", "-Inf" or "NaN".`,
		Example: `  hone-inspect stats runs/r1/
  hone-inspect stats --json scored.parquet | jq .reward.mean`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runStats(cmd.Context(), a, opts, args)
		},
	}
	opts.AddFlags(cmd.Flags())
	return cmd
}

func runStats(ctx context.Context, a *app, opts statsOptions, args []string) error {
	pass, err := a.startPass(ctx, "stats", args)
	if err != nil {
		return err
	}
	defer pass.Close()
	var b trajectory.StatsBuilder
	if _, err := pass.each(ctx, func(g trajectory.Group) error { b.Add(g); return nil }); err != nil {
		return err
	}
	pass.Stop()
	s := b.Stats()
	s.Files = pass.files()
	if opts.JSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	return printStats(a.stdout, s)
}

func printStats(w io.Writer, s trajectory.Stats) error {
	fmt.Fprintf(w, "files %d, groups %d, trajectories %d, additional histories %d, messages %d, trainable turns %d, tokens %d, errors %d\n",
		len(s.Files), s.Groups, s.Trajectories, s.AdditionalHistories, s.Messages, s.TrainableTurns, s.Tokens, s.Errors)
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "\tgroups\ttrajectories\ttokens\terrors\tscored\tunscored\treward mean\tstd\tmin\tmax\t\n"
	line := func(name string, x trajectory.Summary) {
		rs := x.Reward
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t\n", name,
			x.Groups, x.Trajectories, x.Tokens, x.Errors, rs.Scored, rs.Unscored,
			num(rs.Mean, rs.Scored > 0), num(rs.Std, rs.Scored > 1), num(rs.Min, rs.Scored > 0), num(rs.Max, rs.Scored > 0))
	}
	// Empty cells, not an empty line, between the sections, so that one
	// tabwriter block aligns them all.
	blank := strings.Repeat("\t", strings.Count(header, "\t")) + "\n"
	fmt.Fprint(tw, header)
	line("total", s.Summary)
	if len(s.ByAdapter) > 0 {
		fmt.Fprint(tw, blank)
		for _, st := range s.ByAdapter {
			line("model "+servedLabel(st.Adapter, st.Step), st.Summary)
		}
	}
	if len(s.ByEnv) > 0 {
		fmt.Fprint(tw, blank)
		for _, e := range s.ByEnv {
			name := e.Env
			if name == "" {
				name = "(no env)"
			}
			line("env "+name, e.Summary)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, l := range strings.Split(strings.TrimSuffix(table.String(), "\n"), "\n") {
		if _, err := fmt.Fprintln(w, strings.TrimRight(l, " ")); err != nil {
			return err
		}
	}
	return nil
}

// servedLabel names what served a row of the table: the adapter, which
// says its step ("rl@12"), or the name and the step where the name does
// not say it: a base model's served name, or "(none)" when no turn named
// a model.
func servedLabel(adapter string, step int64) string {
	if sv, err := runfolder.ParseServed(adapter); err == nil && sv.HasStep && int64(sv.Step) == step {
		return adapter
	}
	if adapter == "" {
		adapter = "(none)"
	}
	return adapter + " step " + strconv.FormatInt(step, 10)
}

// num prints a reward figure, or "-" where it is undefined (no scored
// trajectories, or fewer than two for the standard deviation).
func num(v float64, defined bool) string {
	if !defined {
		return "-"
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

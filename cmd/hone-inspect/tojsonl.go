package main

import (
	"context"
	"io"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

type toJSONLOptions struct {
	Output string
}

func (o *toJSONLOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.Output, "output", "o", "", "write to this file (atomically) instead of stdout")
}

func newToJSONLCmd(a *app) *cobra.Command {
	var opts toJSONLOptions
	cmd := &cobra.Command{
		Use:   "to-jsonl [flags] FILE|GLOB|DIR|-...",
		Short: "Export trajectories as JSON Lines",
		Long: `to-jsonl writes one JSON object per trajectory, in the OpenAI chat shape
({"messages": [...], "tools": [...]}) plus Hone's fields (run, step, ids,
reward, metrics, ...). from-jsonl reads the same shape back. A reward,
reward component, metric or sampling logprob that is NaN or infinite,
which JSON has no number for, is written as the string "NaN", "+Inf" or "-Inf", which
from-jsonl reads back.`,
		Example: `  hone-inspect to-jsonl scored.parquet > scored.jsonl
  hone-inspect to-jsonl -o all.jsonl runs/r1/ runs/r2/`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runToJSONL(cmd.Context(), a, opts, args)
		},
	}
	opts.AddFlags(cmd.Flags())
	return cmd
}

func runToJSONL(ctx context.Context, a *app, opts toJSONLOptions, args []string) error {
	pass, err := a.startPass(ctx, "to-jsonl", args)
	if err != nil {
		return err
	}
	defer pass.Close()
	err = cli.WriteOutput(ctx, opts.Output, a.stdout, false, func(w io.Writer) error {
		_, err := pass.each(ctx, func(g trajectory.Group) error { return trajectory.ExportJSONL(w, g) })
		return err
	})
	if err != nil {
		return err
	}
	a.summary("to-jsonl", "%s", pass.Summary())
	return nil
}

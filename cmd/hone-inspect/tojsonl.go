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
reward, metrics, ...). from-jsonl reads the same shape back.`,
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
	r, err := a.openInputs(ctx, args)
	if err != nil {
		return err
	}
	defer r.Close()
	p, err := a.progress(ctx, "trajectories", totalRows(r.Reader))
	if err != nil {
		return err
	}
	defer p.Stop()
	err = cli.WriteOutput(opts.Output, a.stdout, false, func(w io.Writer) error {
		for {
			g, err := r.Next(ctx)
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return classify(err)
			}
			if err := trajectory.ExportJSONL(w, g); err != nil {
				return err
			}
			p.Add(int64(len(g.Trajectories)), groupTokens(g))
		}
	})
	if err != nil {
		return err
	}
	a.summary("to-jsonl", "%s", p.Summary())
	return nil
}

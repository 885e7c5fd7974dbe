package main

import (
	"context"
	"io"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

type catOptions struct {
	Output string
}

func (o *catOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.Output, "output", "o", "", "write Parquet to this file (atomically) instead of stdout")
}

func newCatCmd(a *app) *cobra.Command {
	var opts catOptions
	cmd := &cobra.Command{
		Use:   "cat [flags] FILE|GLOB|DIR|-...",
		Short: "Merge trajectory files into one, groups intact",
		Long: `cat reads the inputs in order and writes every group to one Parquet file.
Groups stay whole and in input order; a trajectory id that appears twice or
a group split across inputs is an error (exit 2), so the output is always a
valid file. A file named twice (or also in a folder given) is read once,
at its first place, and named on stderr. Nothing is written if anything
fails.`,
		Example: `  hone-inspect cat -o all.parquet runs/r1/ runs/r2/
  hone-inspect cat a.parquet b.parquet | hone-inspect stats -`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCat(cmd.Context(), a, opts, args)
		},
	}
	opts.AddFlags(cmd.Flags())
	return cmd
}

func runCat(ctx context.Context, a *app, opts catOptions, args []string) error {
	// Refuse a terminal before reading anything.
	if _, err := cli.ChooseOutput(opts.Output, cli.IsTerminal(a.stdout), true); err != nil {
		return err
	}
	pass, err := a.startPass(ctx, "cat", args)
	if err != nil {
		return err
	}
	defer pass.Close()
	var groups int64
	err = cli.WriteOutput(ctx, opts.Output, a.stdout, true, func(out io.Writer) error {
		w := trajectory.NewWriter(out, trajectory.WriterOptions{})
		var err error
		groups, err = pass.each(ctx, func(g trajectory.Group) error { return classify(w.WriteGroup(ctx, g)) })
		if err != nil {
			return err
		}
		return w.Close()
	})
	if err != nil {
		return err
	}
	a.summary("cat", "%s → %s; %s", plural(len(pass.files()), "file"), plural(groups, "group"), pass.Summary())
	return nil
}

package main

import (
	"context"
	"fmt"

	"github.com/hone-rl/hone/format/trajectory"
	"github.com/spf13/cobra"
)

func newValidateCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE|GLOB|DIR|-...",
		Short: "Check that the inputs are well-formed trajectory files",
		Long: `validate reads every input through the format's checks: footers and schema
version, columns and types, each row's fields (ids, split, JSON fields, token
ids and logprobs of equal length), trajectory ids unique across the inputs,
and every group contiguous in one file. It exits 0 and prints a count when
all is well, and exits 2 naming the file, row, group and field of the first
problem otherwise.`,
		Example: `  hone-inspect validate runs/r1/
  hone-inspect validate a.parquet b.parquet && echo ok`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runValidate(cmd.Context(), a, args)
		},
	}
}

func runValidate(ctx context.Context, a *app, args []string) error {
	pass, err := a.startPass(ctx, "validate", args)
	if err != nil {
		return err
	}
	defer pass.Close()
	groups, err := pass.each(ctx, func(trajectory.Group) error { return nil })
	if err != nil {
		return err
	}
	pass.Stop()
	_, err = fmt.Fprintf(a.stdout, "ok: %s, %s, %s\n", plural(len(pass.files()), "file"), plural(groups, "group"), pluralOf(pass.State().Done, "trajectory", "trajectories"))
	return err
}

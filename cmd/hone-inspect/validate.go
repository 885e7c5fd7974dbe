package main

import (
	"context"
	"fmt"
	"io"

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
	var groups int64
	for {
		g, err := r.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return classify(err)
		}
		groups++
		p.Add(int64(len(g.Trajectories)), groupTokens(g))
	}
	p.Stop()
	st := p.State()
	_, err = fmt.Fprintf(a.stdout, "ok: %d files, %d groups, %d trajectories\n", len(r.Files()), groups, st.Done)
	return err
}

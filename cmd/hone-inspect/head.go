package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

type headOptions struct {
	N      int
	Pretty bool
}

func (o *headOptions) AddFlags(fs *pflag.FlagSet) {
	fs.IntVarP(&o.N, "lines", "n", 5, "number of trajectories to print (0 = all)")
	fs.BoolVar(&o.Pretty, "pretty", false, "indent each JSON record over several lines")
}

func newHeadCmd(a *app) *cobra.Command {
	var opts headOptions
	cmd := &cobra.Command{
		Use:   "head [flags] FILE|GLOB|DIR|-...",
		Short: "Print the first trajectories as JSON lines",
		Long: `head prints the first N trajectories of the inputs, one JSON object per line
(with --pretty, each object indented over several lines), in the shape
to-jsonl writes (OpenAI chat messages plus Hone's fields).`,
		Example: `  hone-inspect head -n 2 scored.parquet
  hone-inspect head --pretty -n 1 runs/r1/
  hone-inspect head -n 0 scored.parquet | jq -c '{id: .trajectory_id, reward}'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runHead(cmd.Context(), a, opts, args)
		},
	}
	opts.AddFlags(cmd.Flags())
	return cmd
}

func runHead(ctx context.Context, a *app, opts headOptions, args []string) error {
	if opts.N < 0 {
		return cli.Usagef("--lines %d: want 0 (all) or more", opts.N)
	}
	r, err := a.openInputs(ctx, args)
	if err != nil {
		return err
	}
	defer r.Close()
	a.warnRepeated("head", r.set)
	out := bufio.NewWriter(a.stdout)
	var line bytes.Buffer
	printed := 0
	for opts.N == 0 || printed < opts.N {
		g, err := r.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return classify(err)
		}
		if opts.N > 0 && len(g.Trajectories) > opts.N-printed {
			g.Trajectories = g.Trajectories[:opts.N-printed]
		}
		printed += len(g.Trajectories)
		if !opts.Pretty {
			if err := trajectory.ExportJSONL(out, g); err != nil {
				return err
			}
			continue
		}
		line.Reset()
		if err := trajectory.ExportJSONL(&line, g); err != nil {
			return err
		}
		for _, l := range bytes.Split(bytes.TrimSuffix(line.Bytes(), []byte("\n")), []byte("\n")) {
			var ind bytes.Buffer
			if err := json.Indent(&ind, l, "", "  "); err != nil {
				return err
			}
			ind.WriteByte('\n')
			if _, err := out.Write(ind.Bytes()); err != nil {
				return err
			}
		}
	}
	return out.Flush()
}

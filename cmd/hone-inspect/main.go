package main

import (
	"context"
	"io"
	"log/slog"
	"os"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/spf13/cobra"
)

func main() {
	cli.Main("hone-inspect", func(ctx context.Context) error {
		a := &app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}
		return cli.ExecuteCommand(ctx, newRootCmd(a), os.Args[1:])
	})
}

// app is what every subcommand shares: the standard streams (so that tests
// and callers can replace them) and the logger built from the global flags.
type app struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	logOpt cli.LogOptions
	log    *slog.Logger
}

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "hone-inspect",
		Short: "Look into Hone trajectory files and model folders",
		Long: `hone-inspect looks into Hone trajectory files (zstd Parquet, one row per
trajectory, groups never split), training run folders (log-eval, report)
and model folders (tokenize, render). Inputs are files, globs, directories
of *.parquet files (*.jsonl for from-jsonl), file:// or object-store URLs
(s3://BUCKET/KEY?endpoint=…, a folder being a key prefix), or - for stdin;
a file named twice is read once and named on stderr. Parquet output goes
to -o PATH or to a stdout that is not a terminal.

Exit codes: 0 ok, 1 failure, 2 bad usage or bad input, 130 interrupted.`,
		Example: `  hone-inspect stats runs/r1/
  hone-inspect validate 'runs/*/step-*.parquet'
  hone-inspect head -n 2 scored.parquet | jq .reward`,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			log, err := a.logOpt.Logger(a.stderr)
			if err != nil {
				return err
			}
			a.log = log
			return nil
		},
	}
	a.logOpt.AddFlags(root.PersistentFlags())
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.AddCommand(
		newSchemaCmd(a),
		newHeadCmd(a),
		newStatsCmd(a),
		newValidateCmd(a),
		newToJSONLCmd(a),
		newFromJSONLCmd(a),
		newCatCmd(a),
		newTokenizeCmd(a),
		newRenderCmd(a),
		newReportCmd(a),
		newLogEvalCmd(a),
	)
	return root
}

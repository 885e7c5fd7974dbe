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
	cli.Main("hone-train", func(ctx context.Context) error {
		return cli.ExecuteCommand(ctx, newRootCmd(os.Stdout, os.Stderr), os.Args[1:])
	})
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "hone-train",
		Short: "Train LoRA adapters for Hone models",
		Long: `hone-train trains LoRA adapters on scored trajectory files.

Exit codes: 0 ok, 1 failure, 2 bad usage or bad input, 130 interrupted.`,
		Example: `  hone-train init-model --family qwen3 --hidden 64 --layers 2 -o models/tiny`,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	// Logs (one line per step, the end summary) go to stderr through
	// log/slog, as in the other stages.
	logOpt := &cli.LogOptions{}
	logOpt.AddFlags(root.PersistentFlags())
	logger := func() (*slog.Logger, error) { return logOpt.Logger(stderr) }
	root.AddCommand(newInitModelCmd(stdout))
	root.AddCommand(newGRPOCmd(logger))
	root.AddCommand(newSFTCmd(logger))
	return root
}

package main

import (
	"log/slog"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/train/sft"
	"github.com/spf13/cobra"
)

func newSFTCmd(logger func() (*slog.Logger, error)) *cobra.Command {
	var opts sft.Options
	var jb jobBackend
	var remote remoteOut
	cmd := &cobra.Command{
		Use:   "sft --model DIR --run NAME [flags] FILES...",
		Short: "Fine-tune a LoRA adapter on assistant turns (trajectory or JSONL chat files)",
		Long: `sft trains a LoRA adapter to imitate assistant turns: Parquet trajectory
files, or JSON Lines chat files (.jsonl, one {"messages": [...], "tools": [...]}
per line; on stdin or through a pipe, told from Parquet by their content).
--turns all trains every assistant turn (its tool calls included; system,
user and tool messages are context: TRL's assistant_only_loss), --turns last
only the last of each conversation. A trajectory that marks some assistant
turns trainable (hone-collect and hone-proxy mark the turns the policy
produced, not those the agent wrote itself; "trainable": true in a JSON
line) trains those alone, as grpo does; one that marks none trains every
assistant turn. A conversation with no assistant turn is
left out, with one warning naming the first such rows (and, for a line
without "messages", the keys it has instead). Trajectories of split val or
test (held-out data: hone-collect --split, hone-inspect log-eval) are left out
too, with one warning naming how many and the first rows; inputs of held-out
rows alone, or with a group of both held-out rows and rows to train, are
refused (exit code 2). The loss is the mean negative log-likelihood over the
step's assistant tokens. Checkpoints, --resume, metrics and the stop on a
NaN or Inf loss, gradient or weights work as in grpo; --resume takes the
run's own files, known by their contents' sha256 (under another path too,
the folder moved; a file regenerated under the same name is refused). A step folder can seed GRPO
with hone-train grpo --init-adapter OUT/RUN/step-N.`,
		Example: `  hone-train sft --model models/tiny --run warmup --epochs 3 --lr 1e-3 data/scripted.jsonl
  hone-train sft --model models/tiny --run best --min-reward 1 --turns last scored/`,
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := cli.ResolveInputs(cmd.Context(), args, fileset.Options{})
			if err != nil {
				return err
			}
			defer in.Close()
			opts.Inputs = in
			check := func() error {
				c := opts // sft.Run validates its own copy again
				return c.Validate()
			}
			return runJob(cmd.Context(), logger, cmd.Flags(), &jb, &remote, &opts.Options, check, func() error { return sft.Run(cmd.Context(), opts) })
		},
	}
	opts.AddFlags(cmd.Flags())
	jb.addFlags(cmd.Flags())
	remote.addFlags(cmd.Flags())
	return cmd
}

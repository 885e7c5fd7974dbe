package main

import (
	"log/slog"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/train/grpojob"
	"github.com/spf13/cobra"
)

func newGRPOCmd(logger func() (*slog.Logger, error)) *cobra.Command {
	var opts grpojob.Options
	var jb jobBackend
	var remote remoteOut
	cmd := &cobra.Command{
		Use:   "grpo --model DIR --run NAME [flags] (FILES... | --watch-dir DIR)",
		Short: "Train a LoRA adapter with GRPO on scored trajectory files",
		Long: `grpo trains a LoRA adapter on groups of scored trajectories (Parquet files,
globs or folders). Advantages are A = r − mean(group), divided by the group's
std unless --scale-rewards says otherwise; zero-advantage trajectories are
dropped and counted. Only the tokens the policy sampled are trained, with
their stored logprobs. Every trajectory needs a reward, or an error for an
episode that failed: unscored rows are refused (exit code 2), naming them.
Trajectories of split val or test (held-out data: hone-collect --split,
hone-inspect log-eval) are never trained: they are left out with one warning
naming how many and the first rows, and inputs of held-out rows alone are
refused (exit code 2), as is a group of both held-out rows and rows to train
(a group is one scenario, which is in one split); a --watch-dir call that finds only such files records
them as consumed and trains nothing.

Default loss (ART's): −clip(sg(ρ), 1−ε, 1+ε_high)·A·logπ with ε=1, ε_high=4,
ρ = exp(logπ − logπ_sampler) per token, every trajectory weighted equally.
--loss ppo gives −min(ρA, clip(ρ, 1−ε, 1+ε_high)A) with ε=0.2; --ratio-level
sequence gives GSPO; --norm tokens|constant give DAPO's token mean and
Dr. GRPO's constant; --beta adds the k3 KL to the base model to the loss
(ART's older beta); --tis C truncated importance sampling against the
sampler's logprobs.

ART's step shape: --norm art packs the step's histories into rows of
--packed-sequence-length tokens with ART's trajectory weights and advantage
scaling, and takes one optimizer update per row. ART's other knobs:
--ratio-level average|geometric_average, --ratio-per-history, --max-is-weight,
--mask-prob-ratio, --kimi-k2-tau, --tis-mode sampler, --advantage-balance,
--lr-trajectories-power, --scale-lr-by-reward-std, and --kl-penalty-coef c
(ART's kl_penalty_coef: no loss term, but each token's advantage shifted by
c·(row mean of k − k_t), k_t = logπ − logπ_base, the adapter off for the
base; --kl-penalty-source sample takes the sampler's logπ) (docs/art.md maps
every ART option to a flag).

Each step is saved to OUT/RUN/step-NNNNNN (PEFT adapter, optimizer state,
train_config.json), then OUT/RUN/latest is moved to it; metrics go to
OUT/RUN/metrics.jsonl, one JSON object per step. --resume continues from
latest and ends bit-identical to an uninterrupted run (same machine,
--device, --compute and --threads), even after SIGKILL. Those three are
saved with the run's config; a resume with others trains and says so on
stderr, since its steps may round differently. SIGINT or SIGTERM first
saves the last finished step that --save-every left unsaved, then exits
130 (with --norm art, which updates the weights part way into a step, from
a copy of the adapter and the optimizer's moments taken as the step
began, when the step before it was unsaved). A step whose loss, gradient or updated
weights are NaN or Inf stops the run (exit code 1) before it is saved.

Rounds: --resume with new trajectory files is the next session of the same
run: the adapter and the optimizer state carry over, the data order is
seeded by --seed plus the session's index, and --steps (or --epochs)
counts the steps on these files. Sessions are known by the sha256 of their
files (OUT/RUN/manifest.json lists them): the last session's files again
continue that session. --save-every, --keep-last, --best-metric and
--best-mode may change too: the resume says so, records them in the run's
config, names OUT/RUN/best again by them and prunes by them. Any other
option must stay as the run has it; a change is refused (exit code 2)
naming the option and both values.

--watch-dir DIR trains on the *.parquet files in DIR that OUT/RUN/manifest.json
does not list (by sha256), holding OUT/RUN/lock; with nothing new it says so
and exits 0. A file it consumed is not read again while its size and
modification time (and an object's ETag, a local file's inode) stay those
recorded when it was hashed. A symbolic link is read as the file it names;
one whose target does not exist is named in a warning and left for a later
call. --steps then counts steps per session. DIR may be named another
way on a later call (relative, absolute, moved): files are known by sha256.
A new file holding groups a consumed file trained (a re-scored copy) is
trained too, with one warning counting them and naming the files.`,
		Example: `  hone-train grpo --model models/tiny --run ttt --groups-per-step 16 scored/round-*.parquet
  hone-train grpo --model models/tiny --run ttt --loss ppo --epsilon 0.2 --epsilon-high 0.28 --norm tokens scored/
  hone-train grpo --model models/tiny --run ttt --watch-dir scored/
  hone-train grpo --model models/tiny --run ttt --resume --groups-per-step 16 scored/round-2.parquet
  hone-train grpo --model models/tiny --run art-e --norm art --groups-per-step 12 --lr 1.2e-5 scored/
  hone-train grpo --model models/tiny --run art-e --norm art --kl-penalty-coef 0.1 scored/`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.WatchDir == "" {
				in, err := cli.ResolveInputs(cmd.Context(), args, fileset.Options{})
				if err != nil {
					return err
				}
				defer in.Close()
				opts.Inputs = in
			} else if len(args) > 0 {
				return cli.Usagef("grpo: give files or --watch-dir, not both")
			}
			check := func() error {
				c := opts // grpojob.Run normalises and validates its own copy again
				c.Normalize()
				return c.Validate()
			}
			return runJob(cmd.Context(), logger, cmd.Flags(), &jb, &remote, &opts.Options, check, func() error { return grpojob.Run(cmd.Context(), opts) })
		},
	}
	opts.AddFlags(cmd.Flags())
	jb.addFlags(cmd.Flags())
	remote.addFlags(cmd.Flags())
	return cmd
}

package grpojob

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/internal/flagval"
	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/train/checkpoint"
	"github.com/hone-rl/hone/train/grpo"
	"github.com/hone-rl/hone/train/trainer"
	"github.com/spf13/pflag"
)

// Options configure a GRPO run. The JSON form (Resume excluded) is the
// run's config, saved with each checkpoint and compared on resume.
type Options struct {
	trainer.Options
	Inputs          *fileset.Set `json:"inputs,omitempty"` // saved as its names
	WatchDir        string       `json:"watch_dir,omitempty"`
	GroupsPerStep   int          `json:"groups_per_step"`
	ScaleRewards    string       `json:"scale_rewards"`
	AllowNoLogprobs bool         `json:"allow_no_logprobs"`
	Loss            grpo.Config  `json:"loss"`
}

// AddFlags registers the GRPO flags and the shared ones.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Options.AddFlags(fs, 5e-6)
	fs.StringVar(&o.WatchDir, "watch-dir", "", "incremental mode: train on the *.parquet files of DIR not yet consumed by this run (implies --resume)")
	fs.IntVar(&o.GroupsPerStep, "groups-per-step", 0, "groups per optimizer step (0: all groups of the inputs)")
	fs.StringVar(&o.ScaleRewards, "scale-rewards", "group", "divide advantages by the group's std (group), the batch's (batch) or not at all (none; Dr. GRPO)")
	fs.BoolVar(&o.AllowNoLogprobs, "allow-no-logprobs", false, "train trajectories whose sampled logprobs are missing (ratio taken as 1)")
	d := grpo.DefaultConfig()
	fs.StringVar(&o.Loss.Loss, "loss", d.Loss, "art: −clip(sg(ρ),1−ε,1+ε_high)·A·logπ (ART default); ppo: −min(ρA, clip(ρ,1−ε,1+ε_high)A)")
	// -1 stands for the loss's own value (Normalize); --help shows it in words.
	flagval.OptionalFloat(fs, &o.Loss.Epsilon, "epsilon", -1, "lower clip ε (default: 1.0 for art, 0.2 for ppo)")
	flagval.OptionalFloat(fs, &o.Loss.EpsilonHigh, "epsilon-high", -1, "upper clip ε_high (default: 4.0 for art, = --epsilon for ppo; DAPO clip-higher: 0.28)")
	fs.StringVar(&o.Loss.Level, "ratio-level", d.Level, "importance ratio per token or per sequence (GSPO)")
	fs.StringVar(&o.Loss.Norm, "norm", d.Norm, "loss normalization: sequence (each trajectory weighs the same), tokens (token mean over the step, DAPO) or constant (Dr. GRPO)")
	fs.Float64Var(&o.Loss.NormConstant, "norm-constant", d.NormConstant, "L of --norm constant: loss = Σ token losses / (trajectories·L)")
	fs.Float64Var(&o.Loss.Beta, "beta", 0, "weight of the k3 KL penalty to the base model (adapter off); 0: off")
	fs.Float64Var(&o.Loss.TIS, "tis", 0, "truncated importance sampling cap C against the sampler's logprobs (0: off)")
}

// Normalize fills the loss-dependent defaults.
func (o *Options) Normalize() {
	if o.Loss.Epsilon < 0 {
		o.Loss.Epsilon = map[string]float64{"art": 1, "ppo": 0.2}[o.Loss.Loss]
	}
	if o.Loss.EpsilonHigh < 0 {
		o.Loss.EpsilonHigh = o.Loss.Epsilon
		if o.Loss.Loss == "art" {
			o.Loss.EpsilonHigh = 4
		}
	}
	if o.WatchDir != "" {
		o.Resume = true
	}
}

// Validate checks the options.
func (o *Options) Validate() error {
	if err := o.Options.Validate(); err != nil {
		return err
	}
	if _, err := grpo.ParseScale(o.ScaleRewards); err != nil {
		return err
	}
	if o.GroupsPerStep < 0 {
		return fmt.Errorf("--groups-per-step %d must not be negative", o.GroupsPerStep)
	}
	if (o.WatchDir == "") == (o.Inputs.Len() == 0) {
		return fmt.Errorf("give trajectory files or --watch-dir, not both or neither")
	}
	return o.Loss.Validate()
}

// Run trains on o.Backend. Messages (one line per step, resume and skip
// notices, the end summary) go to o.Log (nil: none). Bad options are
// stageerr.ErrUsage; bad model, adapter or trajectory files
// stageerr.ErrBadInput.
func Run(ctx context.Context, o Options) error {
	o.Normalize()
	if err := o.Validate(); err != nil {
		return stageerr.Usage(err)
	}
	if o.Backend == nil {
		return errors.New("grpo: no backend (Options.Backend)")
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	base, err := trainer.LoadBase(o.Backend, &o.Options)
	if err != nil {
		return err
	}
	if o.WatchDir != "" {
		return runWatch(ctx, base, o, log)
	}
	// The inputs are read before Setup touches the run folder, so that a
	// bad input leaves nothing behind.
	gs, err := loadInputs(ctx, base.Text, o, o.Inputs)
	if err != nil {
		return err
	}
	files, err := checkpoint.HashSet(ctx, o.Inputs)
	if err != nil {
		return err
	}
	// New input files on --resume start a new session of the run (runFiles).
	o.MayChange = []string{"inputs"}
	prep, err := trainer.Setup(ctx, base, &o.Options, o, o.Resume, log)
	if err != nil {
		return err
	}
	defer prep.Close()
	return runFiles(ctx, prep, o, gs, files, log)
}

// loadInputs reads and lays out the groups of an input set; one without
// a single group is bad input.
func loadInputs(ctx context.Context, text *layout.Model, o Options, in *fileset.Set) ([]group, error) {
	kw, _ := o.Kwargs()
	gs, err := loadGroups(ctx, text, in, layout.Options{Kwargs: kw}, o.AllowNoLogprobs)
	if err != nil {
		return nil, err
	}
	if len(gs) == 0 {
		return nil, stageerr.BadInputf("no groups in %s", strings.Join(in.Names(), ", "))
	}
	return gs, nil
}

// train runs the run's steps start+1..end on the groups gs, in the order
// seeded by seed: step s of the run is step s−start of this data.
func train(ctx context.Context, prep *trainer.Prepared, o Options, gs []group, start, end int, seed uint64, extra json.RawMessage, log *slog.Logger) error {
	per := o.GroupsPerStep
	if per == 0 || per > len(gs) {
		per = len(gs)
	}
	sc := trainer.Order{N: len(gs), PerStep: per, Seed: seed}
	if prep.Done >= end {
		log.Info("nothing to do", "run", prep.Ckpt.Dir, "step", prep.Done, "target", end)
		return nil
	}
	scale, _ := grpo.ParseScale(o.ScaleRewards)
	loop := o.Options.Loop(prep, o, end, log)
	loop.Extra = extra
	loop.Next = func(ctx context.Context, s int) (*trainer.Job, error) {
		exs, metrics, skip := batch(gs, sc.Items(s-start), scale)
		job := &trainer.Job{Metrics: metrics, Skip: skip, NeedRef: o.Loss.Beta > 0}
		if skip != "" {
			return job, nil
		}
		tot := grpo.Totals{Items: len(exs)}
		for i := range exs {
			tot.Tokens += exs[i].Trainable()
		}
		mbs, err := trainer.Pack(exs, o.TokenBudget)
		if err != nil {
			return nil, err
		}
		job.MicroBatches = mbs
		job.Loss = lossFunc(o.Loss, tot, samplerTokens(exs))
		return job, nil
	}
	return loop.Run(ctx, prep.Done, end)
}

// samplerTokens counts the trainable tokens of exs whose sampling logprob
// is known.
func samplerTokens(exs []trainer.Example) int {
	n := 0
	for _, e := range exs {
		for _, sq := range e.Seqs {
			for j := 1; j < len(sq.Trainable); j++ {
				if sq.Trainable[j] && !math.IsNaN(float64(sq.Logprobs[j])) {
					n++
				}
			}
		}
	}
	return n
}

// lossFunc adapts grpo.Loss to a micro-batch. Besides the loss terms it
// reports how far the trainer's logprobs of the sampled tokens are from
// the sampler's (sampled tokens with known logprobs, known of them in the
// step): |ℓ_θ − ℓ_sampler|, mean and max. Before any update of the
// sampling weights that gap is the mismatch between the two engines (a
// bfloat16 server under a float32 trainer shows here); after, it adds how
// far the policy has moved since sampling.
func lossFunc(c grpo.Config, tot grpo.Totals, known int) trainer.LossFunc {
	return func(mb *trainer.MicroBatch, out trainer.Outputs) (map[string]float64, []float64, error) {
		tk := grpo.Tokens{
			Logprob: out.Logprob, Old: mb.Sampler, Ref: out.Ref,
			Item: mb.Item, Adv: mb.Adv, ItemTokens: mb.ItemTokens,
		}
		if c.TIS > 0 {
			// ℓ^old recomputed with the weights of this step: one update per
			// batch means they equal ℓ_θ exactly; the sampler's logprobs
			// then only enter through the TIS weight.
			tk.Old, tk.Sampler = append([]float32(nil), out.Logprob...), mb.Sampler
		}
		terms, grad, err := grpo.Loss(c, tk, tot)
		if err != nil {
			return nil, nil, err
		}
		sums := map[string]float64{
			"loss": terms.Loss, "policy_loss": terms.Policy, "kl": terms.KL,
			"clip_frac":  float64(terms.Clipped) / float64(tot.Tokens),
			"ratio_mean": terms.Ratio / float64(tot.Tokens),
		}
		if known > 0 {
			var sum, worst float64
			for i, lp := range mb.Sampler {
				if !math.IsNaN(float64(lp)) {
					d := math.Abs(float64(out.Logprob[i]) - float64(lp))
					sum += d
					worst = max(worst, d)
				}
			}
			sums["sampler_logp_diff_mean"] = sum / float64(known)
			sums["sampler_logp_diff_max"] = worst
		}
		return sums, grad, nil
	}
}

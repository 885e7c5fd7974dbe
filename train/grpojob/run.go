package grpojob

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"slices"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/format/runfolder"
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

	// ART's knobs outside the token loss (docs/art.md); omitempty, so
	// configs saved before them compare equal on resume.
	AdvantageBalance    float64 `json:"advantage_balance,omitempty"`
	LRTrajectoriesPower float64 `json:"lr_trajectories_power,omitempty"`
	ScaleLRByRewardStd  bool    `json:"scale_lr_by_reward_std,omitempty"`
	PackedSeqLen        int     `json:"packed_sequence_length,omitempty"`
}

// AddFlags registers the GRPO flags and the shared ones.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Options.AddFlags(fs, 5e-6)
	fs.Lookup("schedule-steps").Usage = trainer.ScheduleStepsUsage("--watch-dir, --resume with new files or more --steps") +
		`; with --norm art and 0, the horizon is the optimizer updates the run will have taken at the step this call trains to, counted from the input files before training; --norm art --watch-dir with cosine needs it, since later rounds' updates are unknown: a --norm art step's count of updates is its "updates" in OUT/RUN/metrics.jsonl, and a call's total the optimizer_updates of its end summary`
	fs.StringVar(&o.WatchDir, "watch-dir", "", "incremental mode: train on the *.parquet files of DIR not yet consumed by this run (implies --resume)")
	fs.IntVar(&o.GroupsPerStep, "groups-per-step", 0, "groups per optimizer step (0: all groups of the inputs)")
	fs.StringVar(&o.ScaleRewards, "scale-rewards", "group", "divide advantages by the group's std (group), the batch's (batch) or not at all (none; Dr. GRPO)")
	fs.BoolVar(&o.AllowNoLogprobs, "allow-no-logprobs", false, "train trajectories whose sampled logprobs are missing (ratio taken as 1)")
	d := grpo.DefaultConfig()
	fs.StringVar(&o.Loss.Loss, "loss", d.Loss, "art: −clip(sg(ρ),1−ε,1+ε_high)·A·logπ (ART default); ppo: −min(ρA, clip(ρ,1−ε,1+ε_high)A)")
	// NaN stands for the loss's own value (Normalize), a value no one can
	// give (the flag refuses NaN), so that a negative one reaches Validate;
	// --help shows it in words.
	flagval.OptionalFloat(fs, &o.Loss.Epsilon, "epsilon", math.NaN(), "lower clip ε (default: 1.0 for art, 0.2 for ppo)")
	flagval.OptionalFloat(fs, &o.Loss.EpsilonHigh, "epsilon-high", math.NaN(), "upper clip ε_high (default: 4.0 for art, = --epsilon for ppo; DAPO clip-higher: 0.28)")
	fs.StringVar(&o.Loss.Level, "ratio-level", d.Level, "importance ratio: token, sequence (GSPO), average ((token+sequence)/2) or geometric_average (√(token·sequence))")
	fs.BoolVar(&o.Loss.RatioPerHistory, "ratio-per-history", false, "take the sequence ratio over each history of a trajectory, not the whole trajectory (ART's)")
	fs.StringVar(&o.Loss.Norm, "norm", d.Norm, "loss normalization: sequence (each trajectory weighs the same), tokens (token mean over the step, DAPO), constant (Dr. GRPO) or art (ART's: trajectories packed into rows, token mean per row, one optimizer update per row)")
	fs.IntVar(&o.PackedSeqLen, "packed-sequence-length", 0, "--norm art: tokens per packed row (0: ART's default, the longest history rounded up to a multiple of 2048, at most --max-seq-len)")
	fs.Float64Var(&o.Loss.NormConstant, "norm-constant", d.NormConstant, "L of --norm constant: loss = Σ token losses / (trajectories·L)")
	fs.Float64Var(&o.Loss.Beta, "beta", 0, "weight of the k3 KL penalty to the base model (adapter off), a loss term (ART's beta to v0.5); 0: off")
	fs.Float64Var(&o.Loss.KLPenaltyCoef, "kl-penalty-coef", 0, "--norm art: shift each token's advantage by c·(row mean of k − k_t), k_t = sg(logπ_src − logπ_base) with the adapter off; no loss term (ART's kl_penalty_coef; 0: off)")
	fs.StringVar(&o.Loss.KLPenaltySource, "kl-penalty-source", "current_learner", "logπ_src of --kl-penalty-coef: current_learner (the policy being trained) or sample (the sampler's logprobs) (ART's kl_penalty_source)")
	fs.Float64Var(&o.Loss.TIS, "tis", 0, "truncated importance sampling cap C against the sampler's logprobs (0: off)")
	fs.StringVar(&o.Loss.TISMode, "tis-mode", "recomputed", "--tis weight: recomputed (min(exp(logπ_old − logπ_sampler), C) with logπ_old recomputed at the step start) or sampler (min(ρ, C) on the ratio against the sampler)")
	fs.Float64Var(&o.Loss.MaxISWeight, "max-is-weight", 0, "cap the importance ratio at this value, every token (ART's max_negative_advantage_importance_sampling_weight; 0: off)")
	fs.BoolVar(&o.Loss.MaskRatio, "mask-prob-ratio", false, "zero the importance ratio outside (1−ε, 1+ε_high) (ART's mask_prob_ratio)")
	fs.Float64Var(&o.Loss.KimiTau, "kimi-k2-tau", 0, "shift each token's advantage by −τ·sg(logπ − logπ_old) (ART's kimi_k2_tau; 0: off)")
	fs.Float64Var(&o.AdvantageBalance, "advantage-balance", 0, "in [−1, 1]: > 0 scales negative advantages by 1−b, < 0 positive ones by 1+b (ART's advantage_balance)")
	fs.Float64Var(&o.LRTrajectoriesPower, "lr-trajectories-power", 0, "scale each update's lr by (histories it trains)^p (ART's num_trajectories_learning_rate_multiplier_power)")
	fs.BoolVar(&o.ScaleLRByRewardStd, "scale-lr-by-reward-std", false, "scale the lr by the trend of the mean within-group reward std, fitted over the run's steps (ART's scale_learning_rate_by_reward_std_dev)")
}

// Normalize fills the loss-dependent defaults.
func (o *Options) Normalize() {
	if math.IsNaN(o.Loss.Epsilon) {
		o.Loss.Epsilon = map[string]float64{"art": 1, "ppo": 0.2}[o.Loss.Loss]
	}
	if math.IsNaN(o.Loss.EpsilonHigh) {
		o.Loss.EpsilonHigh = o.Loss.Epsilon
		if o.Loss.Loss == "art" {
			o.Loss.EpsilonHigh = 4
		}
	}
	if o.WatchDir != "" {
		o.Resume = true
	}
	if o.Loss.TISMode == "recomputed" {
		o.Loss.TISMode = "" // saved as before the mode existed
	}
	if o.Loss.KLPenaltySource == "current_learner" {
		o.Loss.KLPenaltySource = "" // the default; runs saved before the flag lack it
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
	if err := trainer.CheckBestMetric(o.BestMetric, metricNames()); err != nil {
		return err
	}
	if o.GroupsPerStep < 0 {
		return fmt.Errorf("--groups-per-step %d must not be negative", o.GroupsPerStep)
	}
	if (o.WatchDir == "") == (o.Inputs.Len() == 0) {
		return fmt.Errorf("give trajectory files or --watch-dir, not both or neither")
	}
	if !(o.AdvantageBalance >= -1 && o.AdvantageBalance <= 1) {
		return fmt.Errorf("--advantage-balance %v must be in [-1, 1]", o.AdvantageBalance)
	}
	if math.IsNaN(o.LRTrajectoriesPower) || math.IsInf(o.LRTrajectoriesPower, 0) {
		return fmt.Errorf("--lr-trajectories-power %v must be finite", o.LRTrajectoriesPower)
	}
	if err := trainer.CheckFinite(map[string]float64{
		"epsilon": o.Loss.Epsilon, "epsilon-high": o.Loss.EpsilonHigh, "beta": o.Loss.Beta, "tis": o.Loss.TIS,
		"max-is-weight": o.Loss.MaxISWeight, "norm-constant": o.Loss.NormConstant, "kl-penalty-coef": o.Loss.KLPenaltyCoef,
	}); err != nil {
		return err
	}
	if o.PackedSeqLen < 0 || (o.PackedSeqLen > 0 && o.Loss.Norm != "art") {
		return fmt.Errorf("--packed-sequence-length %d: a positive row length, and only with --norm art", o.PackedSeqLen)
	}
	if o.Loss.Norm == "art" && o.Loss.TIS > 0 && o.Loss.TISMode == "" {
		// ART's precalculate_logprobs computes ℓ^old of every row before
		// the first of the step's updates; Hone recomputes it per
		// micro-batch, which is only right with one update per step.
		return fmt.Errorf("--norm art takes an update per row, so --tis needs --tis-mode sampler (recomputed logprobs would come from weights already updated by earlier rows)")
	}
	if o.Loss.Norm == "art" && o.Schedule == "cosine" && o.ScheduleSteps == 0 && o.WatchDir != "" {
		// The schedule counts optimizer updates, one per packed row. On
		// files the run counts them ahead (countUpdates); a --watch-dir
		// run's later files, and so its updates, are unknown. The user
		// cannot count the rows before packing: the message says where a
		// run records them.
		return fmt.Errorf("--norm art --watch-dir with --lr-schedule cosine needs --schedule-steps, the cosine horizon in optimizer updates: one per packed row, known only once a step's rows are packed, and the files of later rounds are not known yet. " +
			`Each step records its count as "updates" in OUT/RUN/metrics.jsonl and on its step log line, and each call its total as optimizer_updates in its "training done" line: ` +
			"train a few steps on files like a round's with --lr-schedule constant under another --run, then give --schedule-steps about the run's planned steps times the updates per step")
	}
	if o.ScaleLRByRewardStd && o.WatchDir != "" {
		return fmt.Errorf("--scale-lr-by-reward-std fits the reward std of every step of the run, which --watch-dir sessions do not hold; train without it, or on the files directly")
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
	defer base.Model.Close() // on a CUDA backend its memory is not the garbage collector's
	if _, err := o.SeqLengths(base); err != nil {
		return err // a --max-seq-len past the model's context, before a watch run is set up
	}
	if o.WatchDir != "" {
		return runWatch(ctx, base, o, log)
	}
	// The inputs are read before Setup touches the run folder, so that a
	// bad input leaves nothing behind; hashed before and after, so that
	// the session records the contents it trains (CheckUnchanged).
	files, err := checkpoint.HashSet(ctx, o.Inputs)
	if err != nil {
		return stageerr.Input(err) // the first reading of the inputs, as the load's
	}
	rk := &trainer.RowKwargs{Flag: o.TemplateKwargs}
	gs, err := loadInputs(ctx, base, o, o.Inputs, rk)
	if err != nil {
		return err
	}
	if err := checkpoint.CheckUnchanged(ctx, o.Inputs, files); err != nil {
		return err
	}
	// New input files on --resume start a new session of the run (runFiles).
	// --chat-template-kwargs may change where it lays out no row
	// (RowKwargs.MayChange).
	o.MayChange = rk.MayChange([]string{"inputs"})
	prep, err := trainer.Setup(ctx, base, &o.Options, o, o.Resuming(), log)
	if err != nil {
		return err
	}
	defer prep.Close()
	return runFiles(ctx, prep, o, gs, files, log)
}

// loadInputs reads and lays out the groups of an input set, each row
// under the chat template kwargs rk resolves; one without
// a single group is bad input, and so is one with a sequence past the
// model's context (trainer.Lengths).
func loadInputs(ctx context.Context, base *trainer.Base, o Options, in *fileset.Set, rk *trainer.RowKwargs) ([]group, error) {
	kw, _ := o.Kwargs()
	lens, err := o.SeqLengths(base)
	if err != nil {
		return nil, err
	}
	if o.Loss.Norm == "art" {
		lens.Budget = 0 // its micro-batches are the packed rows, not --token-budget
		lens.RowLen = o.PackedSeqLen
	}
	var held trainer.HeldOut
	scale, _ := grpo.ParseScale(o.ScaleRewards) // checked by Validate
	gs, err := loadGroups(ctx, base.Text, in, loadOptions{
		Layout: layout.Options{Kwargs: kw}, Kwargs: rk, Undivided: undividedAdvantages(scale, o.Loss.Norm),
		AllowNoLogprobs: o.AllowNoLogprobs, Lens: lens, Held: &held,
	})
	if err != nil {
		return nil, err
	}
	if err := held.Report(o.Log, in.Names()); err != nil {
		return nil, err
	}
	if err := lens.Report(o.Log); err != nil {
		return nil, err
	}
	if len(gs) == 0 {
		return nil, stageerr.BadInputf("no groups in %s", trainer.InputList(in.Names()))
	}
	warnNoLogprobs(gs, o.Log)
	warnNoTrainable(gs, o.AllowNoLogprobs, o.Log)
	var env []string
	for _, g := range gs {
		for _, m := range g.EnvMetrics {
			if !slices.Contains(env, m) {
				env = append(env, m)
			}
		}
	}
	if err := o.CheckEvalMetric(metricNames(), env, true, o.Log); err != nil {
		return nil, err
	}
	return gs, nil
}

// warnNoLogprobs warns, once for the inputs, naming the first rows, when
// trajectories are left out because a trainable token has no sampling
// logprob (a server that returned no token ids or logprobs: OpenAI's
// default, an ART file with text tokens). Each step only counted them
// (no_logprobs) in an info line, so a run on such files trained nothing,
// wrote its steps and exited 0 without naming the flag that trains them.
func warnNoLogprobs(gs []group, log *slog.Logger) {
	rows, total := leftOut(gs, func(g group) []string { return g.NoLogprobs })
	if log == nil || len(rows) == 0 {
		return
	}
	log.Warn(fmt.Sprintf("%d of %d scored trajectories have trainable tokens without a sampling logprob (no token_ids or logprobs in their messages) and are not trained: %s; --allow-no-logprobs trains them with the importance ratio taken as 1",
		len(rows), total, listRows(rows)))
}

// warnNoTrainable warns, once for the inputs, naming the first rows, when
// trajectories are left out because no turn of theirs is marked
// trainable: a plain chat log, or ART's plain assistant messages (only
// its Choices train). Each step only counted them (no_trainable_tokens)
// in an info line, so a run on such files trained nothing and exited 0.
// ART's allow_training_without_logprobs trains plain assistant messages;
// --allow-no-logprobs does not, so the warning says so; given, the flag
// trains a marked turn without its sampled logprobs, which the warning
// then does not ask for.
func warnNoTrainable(gs []group, allowNoLogprobs bool, log *slog.Logger) {
	rows, total := leftOut(gs, func(g group) []string { return g.NoTrainable })
	if log == nil || len(rows) == 0 {
		return
	}
	const marked = "(hone-collect and the proxy mark them; hone-inspect from-jsonl marks ART's Choices, not plain assistant messages)"
	fix := "only assistant turns whose message has trainable: true, with the token_ids and logprobs their server sampled, train " + marked + ", and --allow-no-logprobs does not make a turn trainable"
	if allowNoLogprobs {
		fix = "only assistant turns whose message has trainable: true train " + marked + "; under --allow-no-logprobs, as given, a turn marked trainable trains without sampled logprobs, but --allow-no-logprobs does not make a turn trainable"
	}
	log.Warn(fmt.Sprintf("%d of %d scored trajectories have no trainable turn and are not trained: %s; %s", len(rows), total, listRows(rows), fix))
}

// leftOut gathers the rows of gs that which names (left out of training,
// for one reason) and counts the scored trajectories of gs, for the
// warnings above.
func leftOut(gs []group, which func(group) []string) (rows []string, total int) {
	for _, g := range gs {
		rows = append(rows, which(g)...)
		total += len(g.Rewards)
	}
	return rows, total
}

// metricNames are the metrics of a grpo step's row: the loop's, the
// batch's (batch, stepJob) and the loss's (lossFunc).
func metricNames() []string {
	return append(trainer.LoopMetrics(),
		"reward_mean", "reward_std", "reward_group_std", "groups", "groups_trainable", "trajectories", "trajectories_trained",
		"dropped_zero_adv", "errors", "no_logprobs", "no_trainable_tokens", "too_long", "rows",
		"loss", "policy_loss", "kl", "kl_policy_ref", "clip_frac", "ratio_mean", "sampler_logp_diff_mean", "sampler_logp_diff_max")
}

// train runs the run's steps start+1..end on the groups gs, in the order
// seeded by seed: step s of the run is step s−start of this data.
func train(ctx context.Context, prep *trainer.Prepared, o Options, gs []group, start, end int, seed uint64, extra json.RawMessage, log *slog.Logger) error {
	per := o.GroupsPerStep
	if per == 0 || per > len(gs) {
		per = len(gs)
	}
	sc := trainer.Order{N: len(gs), PerStep: per, Seed: seed, CrossEpochs: o.StepsCrossEpochs}
	if prep.Done >= end {
		log.Info("nothing to do", "run", prep.Ckpt.Dir, "step", prep.Done, "target", end)
		return nil
	}
	var prior []float64
	if o.ScaleLRByRewardStd {
		var err error
		if prior, err = rewardStdHistory(prep.Ckpt, start); err != nil {
			return err
		}
	}
	horizon := end
	if o.Loss.Norm == "art" && o.Schedule == "cosine" && o.ScheduleSteps == 0 {
		var err error
		if horizon, err = countUpdates(ctx, gs, sc, o, start, prep.Done, end, prep.Opt.Step); err != nil {
			return err
		}
		log.Info(fmt.Sprintf("cosine horizon: %d updates, counted from the input", horizon), "restored_updates", prep.Opt.Step, "first_step", prep.Done+1, "last_step", end)
	}
	loop := o.Options.Loop(prep, o, horizon, log)
	loop.Extra = extra
	loop.Next = func(ctx context.Context, s int) (*trainer.Job, error) {
		lrScale := 1.0
		if o.ScaleLRByRewardStd {
			// The run's steps 0..s: those of earlier sessions as their
			// metrics rows recorded them, this session's each a function
			// of the inputs and its index: a resumed run computes the same
			// history.
			y := make([]float64, s+1)
			for k := range y {
				if k < start {
					y[k] = prior[k]
				} else {
					y[k] = groupRewardStd(gs, sc.Items(k-start))
				}
			}
			lrScale = rewardStdLRScale(y)
		}
		return stepJob(gs, sc.Items(s-start), o, lrScale)
	}
	return loop.Run(ctx, prep.Done, end)
}

// countUpdates is the cosine horizon of a --norm art run on files: the
// optimizer updates it will have taken when it reaches step end. Those of
// the steps before done are restored (the optimizer's count, restored);
// each step ahead takes one per packed row, and its rows depend on the
// groups alone (the batch, the zero-advantage drop, ART's weights and the
// packing, not the model), so building each step's job as train will
// counts them exactly. A resumed run counts the rest from its restored
// count, so its horizon is the uninterrupted run's. It stops when ctx
// ends: a long run's count takes seconds (about 4 ms a step), and a Ctrl-C
// then must not wait for it.
func countUpdates(ctx context.Context, gs []group, sc trainer.Order, o Options, start, done, end, restored int) (int, error) {
	n := restored
	for s := done; s < end; s++ {
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("grpo: counting the cosine horizon's updates: %w", err)
		}
		job, err := stepJob(gs, sc.Items(s-start), o, 1)
		if err != nil {
			return 0, fmt.Errorf("grpo: counting the cosine horizon's updates, step %d: %w", s+1, err)
		}
		if job.Skip == "" {
			n += len(job.MicroBatches)
		}
	}
	return n, nil
}

// rewardStdHistory is the reward_group_std of the run's steps 1..n, the
// steps of the sessions before the one starting at step n, from
// metrics.jsonl.
func rewardStdHistory(run *checkpoint.Run, n int) ([]float64, error) {
	if n == 0 {
		return nil, nil
	}
	rows, err := run.ReadMetrics()
	if err != nil {
		return nil, err
	}
	y := make([]float64, n)
	for k := range y {
		v, ok := rows[k+1]["reward_group_std"]
		if !ok {
			return nil, fmt.Errorf("--scale-lr-by-reward-std fits the reward std of every step of the run, and %s has no reward_group_std for step %d",
				filepath.Join(run.Dir, runfolder.MetricsName), k+1)
		}
		y[k] = v
	}
	return y, nil
}

// stepJob builds the job of one step over the groups idx; lrScale
// multiplies the learning rate of each of its updates.
func stepJob(gs []group, idx []int, o Options, lrScale float64) (*trainer.Job, error) {
	scale, _ := grpo.ParseScale(o.ScaleRewards)
	exs, metrics, skip := batch(gs, idx, scale)
	metrics["reward_group_std"] = groupRewardStd(gs, idx)
	job := &trainer.Job{Metrics: metrics, Skip: skip, NeedRef: o.Loss.Beta > 0 || o.Loss.KLPenaltyCoef > 0}
	if skip != "" {
		return job, nil
	}
	balanceAdvantages(exs, o.AdvantageBalance)
	known := samplerTokens(exs)
	tot := grpo.Totals{Items: len(exs)}
	for i := range exs {
		tot.Tokens += exs[i].Trainable()
	}
	if o.Loss.Norm != "art" {
		mbs, err := trainer.Pack(exs, o.TokenBudget)
		if err != nil {
			return nil, err
		}
		job.MicroBatches = mbs
		job.Loss = lossFunc(o.Loss, tot, known, nil, 1)
		job.LRScale = []float64{lrScale * math.Pow(float64(histories(exs)), o.LRTrajectoriesPower)}
		return job, nil
	}
	// ART's step: weights and advantages normalized over the step, every
	// history its own result, packed greedily into rows, one update each.
	w := artWeights(exs)
	hs, hw := artHistories(exs, w)
	rows, err := trainer.Pack(hs, artRowLength(hs, o.PackedSeqLen, o.MaxSeqLen))
	if err != nil {
		return nil, err
	}
	job.MicroBatches, job.PerMicroBatch = rows, true
	job.Loss = lossFunc(o.Loss, tot, known, hw, len(rows))
	job.LRScale = make([]float64, len(rows))
	for k, r := range rows {
		job.LRScale[k] = lrScale * math.Pow(float64(len(r.Examples)), o.LRTrajectoriesPower)
	}
	metrics["rows"] = float64(len(rows))
	return job, nil
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
//
// With weights (--norm art) every micro-batch is a packed row and its own
// update: weights[e] is W of the step's example e, and the loss terms are
// reported as the mean over the step's rows (ART logs each row's loss and
// averages them) rather than their sum.
func lossFunc(c grpo.Config, tot grpo.Totals, known int, weights []float64, rows int) trainer.LossFunc {
	return func(mb *trainer.MicroBatch, out trainer.Outputs) (map[string]float64, []float64, error) {
		tk := grpo.Tokens{
			Logprob: out.Logprob, Old: mb.Sampler, Ref: out.Ref,
			Item: mb.Item, Adv: mb.Adv, ItemTokens: mb.ItemTokens,
			Hist: mb.Hist, HistTokens: mb.HistTokens,
		}
		if weights != nil {
			tk.Weight = make([]float64, len(mb.Examples))
			for k, e := range mb.Examples {
				tk.Weight[k] = weights[e]
			}
		}
		if c.TIS > 0 && c.TISMode == "" {
			// ℓ^old recomputed with the weights of this step: one update per
			// batch means they equal ℓ_θ exactly; the sampler's logprobs
			// then only enter through the TIS weight.
			tk.Old, tk.Sampler = append([]float32(nil), out.Logprob...), mb.Sampler
		}
		terms, grad, err := grpo.Loss(c, tk, tot)
		if err != nil {
			return nil, nil, err
		}
		per := 1 / float64(rows)
		sums := map[string]float64{
			"loss": terms.Loss * per, "policy_loss": terms.Policy * per, "kl": terms.KL * per,
			"clip_frac":  float64(terms.Clipped) / float64(tot.Tokens),
			"ratio_mean": terms.Ratio / float64(tot.Tokens),
		}
		if c.KLPenaltyCoef > 0 {
			// ART logs each row's mean KL and averages the rows.
			sums["kl_policy_ref"] = terms.KLRef * per
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

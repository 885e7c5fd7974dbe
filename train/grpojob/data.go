package grpojob

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/train/grpo"
	"github.com/hone-rl/hone/train/trainer"
)

// group is one scenario's attempts, laid out once at load time.
type group struct {
	ID      string
	File    string            // the input file it is in, as named (its first row's)
	Rewards []float64         // of trajectories without error
	Ex      []trainer.Example // aligned with Rewards; Seqs nil when untrainable
	Missing []string          // why Ex[i] is untrainable ("" when it is trainable)
	Errors  int               // trajectories with an error (failed episodes)
	// NoLogprobs names the rows of its trajectories left out for a
	// trainable token without a sampling logprob ("file row 3 (group g,
	// trajectory t)"), for the run's one warning (loadInputs).
	NoLogprobs []string
	// NoTrainable names the rows of its trajectories left out for having
	// no trainable token, for the run's one warning (loadInputs).
	NoTrainable []string
	// EnvMetrics are the names of the metrics its trajectories report
	// (the environment's), sorted: what an eval split of the same
	// environment records beside log-eval's own (--best-metric val/NAME).
	EnvMetrics []string
}

// loadOptions are how loadGroups reads an input set.
type loadOptions struct {
	Layout layout.Options     // each row's layout, under the command's template kwargs
	Kwargs *trainer.RowKwargs // the kwargs rows record (nil: Layout's for every row)
	// Undivided says the advantages reach the trainer undivided
	// (undividedAdvantages), which bounds the rewards taken (rewardLimit).
	Undivided       bool
	AllowNoLogprobs bool             // train rows without sampling logprobs
	Lens            *trainer.Lengths // the length check (nil: none)
	Held            *trainer.HeldOut // where held-out rows are named (nil: not named)
}

// loadGroups reads an input set and lays out every trajectory. A trajectory
// needs a reward, or an error saying why its episode failed (counted, never
// trained); one with neither was not scored, and the input set is refused,
// naming its rows, since training on the rest would silently drop them.
// A trajectory lo.Lens finds too long (Lengths.Check) is left out as
// "too_long", its reward kept in its group's; the caller reports them
// (Lengths.Report). A trajectory of a held-out split (val, test) is left
// out before any check, named in lo.Held for the caller's one warning
// (HeldOut.Report), and a group left with none is dropped: its reward
// neither counts in a group mean nor is required. A group of both
// held-out rows and rows to train is refused (trainer.GroupSplits). Every
// error that blames the files matches stageerr.ErrBadInput.
func loadGroups(ctx context.Context, text *layout.Model, in *fileset.Set, lo loadOptions) ([]group, error) {
	if lo.Held == nil {
		lo.Held = &trainer.HeldOut{}
	}
	r, err := trajectory.Open(ctx, in)
	if err != nil {
		return nil, stageerr.Input(err)
	}
	defer r.Close()
	rows := rowCounter{files: r.Files()}
	l := &groupLoader{loadOptions: lo, text: text, limit: rewardLimit(lo.Undivided)}
	var mixed []string
	var out []group
	for {
		g, err := r.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, stageerr.Input(err)
		}
		gr := group{ID: g.ID, File: rows.nextFile()}
		heldN := 0
		var splits trainer.GroupSplits
		for i := range g.Trajectories {
			t := &g.Trajectories[i]
			where := rows.next()
			lo.Held.Read++
			splits.Add(fmt.Sprintf("%s (trajectory %s)", where, t.ID), t.Split)
			for k := range t.Metrics {
				if !slices.Contains(gr.EnvMetrics, k) {
					gr.EnvMetrics = append(gr.EnvMetrics, k)
				}
			}
			if trainer.IsHeldOut(t.Split) {
				lo.Held.Rows = append(lo.Held.Rows, fmt.Sprintf("%s (group %s, trajectory %s)", where, g.ID, t.ID))
				heldN++
				continue
			}
			if err := l.add(ctx, &gr, t, where); err != nil {
				return nil, err
			}
		}
		slices.Sort(gr.EnvMetrics)
		if m := splits.Mixed(g.ID); m != "" {
			mixed = append(mixed, m)
		}
		if heldN > 0 && heldN == len(g.Trajectories) {
			continue // every trajectory held out: not a group of this run's
		}
		out = append(out, gr)
	}
	if err := trainer.MixedSplitsError(mixed); err != nil {
		return nil, err
	}
	return out, l.err()
}

// groupLoader lays out the trajectories loadGroups reads that are not
// held out, and keeps the rows it refuses, so that one error names them
// all once the set is read.
type groupLoader struct {
	loadOptions
	text  *layout.Model
	limit float64 // the largest reward magnitude taken (rewardLimit)
	// Rows refused: without a reward, with one past limit, with a
	// sampling logprob no sampler gives.
	unscored, infinite, impossible []string
}

// add lays out t, the trajectory of file row where, into its group gr,
// or counts it among gr's errors or the rows refused.
func (l *groupLoader) add(ctx context.Context, gr *group, t *trajectory.Trajectory, where string) error {
	row := fmt.Sprintf("%s (group %s, trajectory %s)", where, gr.ID, t.ID)
	if t.Error != "" {
		gr.Errors++
		return nil
	}
	if t.Reward == nil || math.IsNaN(*t.Reward) {
		l.unscored = append(l.unscored, row)
		return nil
	}
	if math.IsInf(*t.Reward, 0) || math.Abs(*t.Reward) > l.limit {
		// r − mean(group) would be NaN: nothing to learn from it,
		// and the step's loss with it. A finite reward past the
		// limit overflows the group's std, or an unscaled advantage.
		l.infinite = append(l.infinite, fmt.Sprintf("%s (group %s, trajectory %s: %v)", where, gr.ID, t.ID, *t.Reward))
		return nil
	}
	if bad := badLogprob(t); bad != "" {
		l.impossible = append(l.impossible, fmt.Sprintf("%s (group %s, trajectory %s: %s)", where, gr.ID, t.ID, bad))
		return nil
	}
	ropt, err := l.Kwargs.Options(row, t, l.Layout)
	if err != nil {
		return err
	}
	seqs, err := trainer.LayoutHistories(ctx, l.text, t, ropt)
	if err != nil {
		return stageerr.BadInputf("%s: %w", row, err)
	}
	ex := trainer.Example{Seqs: seqs}
	why := ""
	// The length check comes last: it records the rows it warns
	// of (Lengths.Report), and a row left out for another reason
	// never trains, so neither its length nor its memory matters.
	switch {
	case ex.Trainable() == 0:
		why = "no_trainable"
	case !l.AllowNoLogprobs && missingLogprobs(&ex):
		why = "no_logprobs"
	case l.Lens != nil && l.Lens.Check(&ex, row):
		why = "too_long"
	}
	if why != "" {
		ex.Seqs = nil
	}
	switch why {
	case "no_logprobs":
		gr.NoLogprobs = append(gr.NoLogprobs, row)
	case "no_trainable":
		gr.NoTrainable = append(gr.NoTrainable, row)
	}
	gr.Rewards = append(gr.Rewards, *t.Reward)
	gr.Ex = append(gr.Ex, ex)
	gr.Missing = append(gr.Missing, why)
	return nil
}

// err refuses the rows the loader kept, by kind; nil when there are none.
func (l *groupLoader) err() error {
	if len(l.unscored) > 0 {
		return unscoredError(l.unscored)
	}
	if len(l.infinite) > 0 {
		return rewardRangeError(l.infinite, l.Undivided)
	}
	if len(l.impossible) > 0 {
		return stageerr.BadInputf("%d trajectories have a sampling logprob that no sampler gives: %s; a logprob is a finite number ≤ 0 (NaN where unknown): check what wrote the logprobs field (probabilities or logits instead of log-probabilities?)",
			len(l.impossible), listRows(l.impossible))
	}
	return nil
}

// maxReward is the largest reward magnitude taken. The group and batch
// standard deviations sum squared deviations in float64, whose squares
// overflow to +Inf past about 1.3e154, and the advantages then come out 0
// as for a group of equal rewards; at 1e100 a sum of squares stays finite
// for any number of trajectories a run can hold.
const maxReward = 1e100

// maxUnscaledReward is the largest reward magnitude taken where the
// advantages reach the trainer undivided (undividedAdvantages): an
// advantage is then the reward less its group's mean, and the trainer
// holds it as float32 (largest about 3.4e38): two rewards of at most
// 1e38 and of opposite sign differ by at most 2e38, which fits.
const maxUnscaledReward = 1e38

// undividedAdvantages says whether the advantages under scale
// (--scale-rewards) and norm (--norm) reach the trainer as the rewards
// less their group's mean: under none, but for --norm art, which divides
// them by their mean magnitude over the step in float64 first
// (artWeights), so that any reward maxReward allows fits.
func undividedAdvantages(scale grpo.Scale, norm string) bool {
	return scale == grpo.ScaleNone && norm != "art"
}

// rewardLimit is the largest reward magnitude taken, undivided saying
// whether the advantages reach the trainer so (undividedAdvantages).
func rewardLimit(undivided bool) float64 {
	if undivided {
		return maxUnscaledReward
	}
	return maxReward
}

// rewardRangeError refuses the rows (file, row, group, trajectory and
// reward each) whose reward is infinite or past rewardLimit(undivided),
// saying why that limit.
func rewardRangeError(rows []string, undivided bool) error {
	why := "the group's standard deviation squares it"
	if undivided {
		why = "under --scale-rewards none an advantage is the reward less its group's mean, held as a float32 (largest about 3.4e38): rescale the rewards, divide the advantages by a std (--scale-rewards group or batch), or by their mean magnitude (--norm art)"
	}
	return stageerr.BadInputf("%d trajectories have an infinite reward or one of magnitude above %g: %s; a reward must be a finite number of at most that size (%s)",
		len(rows), rewardLimit(undivided), listRows(rows), why)
}

// maxLogprob is the largest sampling logprob taken. A log-probability is
// ≤ 0; a sampler's log-softmax in float32 can round a near-certain
// token's to a few ulps above 0 (about 1e-7), which is harmless in the
// importance ratio. A value further above 0 is not a log-probability (a
// probability or a logit in the field), and its ratio would be wrong.
const maxLogprob = 1e-3

// badLogprob names the first sampling logprob of t's trainable turns
// that no sampler gives (±Inf, or above maxLogprob), by its field
// ("messages[3].logprobs[5] is +Inf"); "" when there is none. NaN is
// unknown, which missingLogprobs handles. +Inf and a positive value would
// make the PPO ratio exp(ℓ_θ − ℓ_old) too small; −Inf (a token of
// probability 0, which cannot have been sampled) makes it infinite and
// the loss NaN.
func badLogprob(t *trajectory.Trajectory) string {
	check := func(prefix string, msgs []trajectory.Message) string {
		for i, m := range msgs {
			if !m.Trainable {
				continue // its logprobs are not trained on
			}
			for j, lp := range m.Logprobs {
				if v := float64(lp); math.IsInf(v, 0) || v > maxLogprob {
					return fmt.Sprintf("%smessages[%d].logprobs[%d] is %v", prefix, i, j, v)
				}
			}
		}
		return ""
	}
	if bad := check("", t.Messages); bad != "" {
		return bad
	}
	for k, h := range t.AdditionalHistories {
		if bad := check(fmt.Sprintf("additional_histories[%d].", k), h.Messages); bad != "" {
			return bad
		}
	}
	return ""
}

// unscoredError lists the first rows without a reward.
func unscoredError(rows []string) error {
	return stageerr.BadInputf("%d trajectories have no reward and no error: %s; score the files first (hone-score), or set error on episodes that failed",
		len(rows), listRows(rows))
}

// listRows joins the first rows of a list, counting the rest.
func listRows(rows []string) string {
	const show = 5
	list := strings.Join(rows[:min(show, len(rows))], ", ")
	if len(rows) > show {
		list += fmt.Sprintf(" and %d more", len(rows)-show)
	}
	return list
}

// rowCounter names the file and row (0-based, as the trajectory package
// numbers them) of each trajectory a Reader returns: it reads the files in
// order and a group's rows in order, so the n-th trajectory is the n-th
// row of the input set. An object is named without its bucket query
// (fileset.DisplayName), which would print the store's address for
// every row a message lists.
type rowCounter struct {
	files []trajectory.FileInfo
	file  int
	row   int64
}

// nextFile is the name of the file of the row next() counts next ("" past
// the last).
func (c *rowCounter) nextFile() string {
	f, row := c.file, c.row
	for f < len(c.files) && row >= c.files[f].Rows {
		f, row = f+1, 0
	}
	if f == len(c.files) {
		return ""
	}
	return c.files[f].Path
}

func (c *rowCounter) next() string {
	for c.file < len(c.files) && c.row >= c.files[c.file].Rows {
		c.file, c.row = c.file+1, 0
	}
	if c.file == len(c.files) { // not reached: the reader checks each file's rows against its footer
		return "a row past the footers' counts"
	}
	c.row++
	return fmt.Sprintf("%s row %d", fileset.DisplayName(c.files[c.file].Path), c.row-1)
}

// missingLogprobs reports whether a trainable token of e has no sampling
// logprob (NaN); a value no sampler gives was refused by badLogprob.
func missingLogprobs(e *trainer.Example) bool {
	for _, s := range e.Seqs {
		for j := 1; j < len(s.IDs); j++ {
			if s.Trainable[j] && math.IsNaN(float64(s.Logprobs[j])) {
				return true
			}
		}
	}
	return false
}

// batch builds the examples of the given groups with their advantages and
// the step's data metrics; skip says why nothing is trainable.
func batch(gs []group, idx []int, scale grpo.Scale) (exs []trainer.Example, metrics map[string]float64, skip string) {
	rewards := make([][]float64, len(idx))
	for k, g := range idx {
		rewards[k] = gs[g].Rewards
	}
	adv := grpo.Advantages(rewards, scale)
	var all []float64
	var errs, zero, noLP, noTok, tooLong, trajs, trainable, equal, errOnly int
	for k, g := range idx {
		gr := &gs[g]
		errs += gr.Errors
		trajs += len(gr.Rewards) + gr.Errors
		all = append(all, gr.Rewards...)
		if len(gr.Rewards) == 0 {
			errOnly++
			continue
		}
		n := 0
		eq := true
		for i, ex := range gr.Ex {
			a := adv[k][i]
			if a != 0 {
				eq = false
			}
			switch {
			case a == 0:
				zero++
			case gr.Missing[i] == "no_logprobs":
				noLP++
			case gr.Missing[i] == "too_long":
				tooLong++ // longer than --max-seq-len
			case ex.Seqs == nil:
				noTok++ // no trainable assistant tokens at all
			default:
				ex.Adv = a
				exs = append(exs, ex)
				n++
			}
		}
		if eq {
			equal++
		}
		if n > 0 {
			trainable++
		}
	}
	mean, std := meanStd(all)
	metrics = map[string]float64{
		"reward_mean": mean, "reward_std": std,
		"groups": float64(len(idx)), "groups_trainable": float64(trainable),
		"trajectories": float64(trajs), "trajectories_trained": float64(len(exs)),
		"dropped_zero_adv": float64(zero), "errors": float64(errs), "no_logprobs": float64(noLP),
		"no_trainable_tokens": float64(noTok), "too_long": float64(tooLong),
	}
	if len(exs) == 0 {
		skip = fmt.Sprintf("%d groups: %d with equal rewards (zero advantage), %d with only errored trajectories; %d trajectories: %d errors, %d zero advantage, %d without sampled logprobs, %d without trainable tokens, %d longer than --max-seq-len",
			len(idx), equal, errOnly, trajs, errs, zero, noLP, noTok, tooLong)
	}
	return exs, metrics, skip
}

func meanStd(xs []float64) (float64, float64) {
	if len(xs) == 0 {
		return 0, 0 // JSON has no NaN; "groups" = 0 tells the story
	}
	m := 0.0
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return m, math.Sqrt(v / float64(len(xs)))
}

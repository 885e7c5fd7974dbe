package sft

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/train/trainer"
	"github.com/spf13/pflag"
)

// Options configure an SFT run; the JSON form is the run's saved config.
type Options struct {
	trainer.Options
	Inputs    *fileset.Set `json:"inputs"` // saved as its names
	Turns     string       `json:"turns"`
	BatchSize int          `json:"batch_size"`
	MinReward *float64     `json:"min_reward,omitempty"`
}

// AddFlags registers the SFT flags and the shared ones.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Options.AddFlags(fs, 5e-5)
	fs.StringVar(&o.Turns, "turns", "all", "assistant turns to train: all, or last (of each conversation)")
	fs.IntVar(&o.BatchSize, "batch-size", 8, "conversations per optimizer step (0: all)")
	fs.Var(&optFloat{&o.MinReward}, "min-reward", "train only trajectories with reward ≥ this (and a reward)")
}

// optFloat is a float flag that stays nil until set.
type optFloat struct{ p **float64 }

func (f *optFloat) String() string {
	if f.p == nil || *f.p == nil {
		return ""
	}
	return strconv.FormatFloat(**f.p, 'g', -1, 64)
}

func (f *optFloat) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return err
	}
	*f.p = &v
	return nil
}

func (f *optFloat) Type() string { return "float" }

// Validate checks the options.
func (o *Options) Validate() error {
	if err := o.Options.Validate(); err != nil {
		return err
	}
	if o.Turns != "all" && o.Turns != "last" {
		return fmt.Errorf("--turns %q: want all or last", o.Turns)
	}
	if o.BatchSize < 0 {
		return fmt.Errorf("--batch-size %d must not be negative", o.BatchSize)
	}
	if o.Inputs.Len() == 0 {
		return fmt.Errorf("no input files")
	}
	return nil
}

// Run trains on o.Backend. Messages (one line per step, resume notices,
// the end summary) go to o.Log (nil: none). Bad options are
// stageerr.ErrUsage; bad model, adapter or input files
// stageerr.ErrBadInput.
func Run(ctx context.Context, o Options) error {
	if err := o.Validate(); err != nil {
		return stageerr.Usage(err)
	}
	if o.Backend == nil {
		return errors.New("sft: no backend (Options.Backend)")
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	base, err := trainer.LoadBase(o.Backend, &o.Options)
	if err != nil {
		return err
	}
	// The inputs are read before Setup touches the run folder, so that a
	// bad input leaves nothing behind.
	kw, _ := o.Kwargs()
	exs, skipped, err := Load(ctx, base.Text, o.Inputs, o.Turns, o.MinReward, layout.Options{Kwargs: kw})
	if err != nil {
		return err
	}
	if len(exs) == 0 {
		return stageerr.BadInputf("nothing to train in %s: %d conversations skipped (errors, reward filter or no assistant turn)", strings.Join(o.Inputs.Names(), ", "), skipped)
	}
	prep, err := trainer.Setup(ctx, base, &o.Options, o, o.Resume, log)
	if err != nil {
		return err
	}
	defer prep.Close()
	log.Info("sft examples", "conversations", len(exs), "skipped", skipped)
	per := o.BatchSize
	if per == 0 || per > len(exs) {
		per = len(exs)
	}
	order := trainer.Order{N: len(exs), PerStep: per, Seed: o.Seed}
	end := order.StepsFor(o.Epochs)
	if o.Steps > 0 {
		end = o.Steps
	}
	if prep.Done >= end {
		log.Info("nothing to do", "run", prep.Ckpt.Dir, "step", prep.Done, "target", end)
		return nil
	}
	loop := o.Options.Loop(prep, o, end, log)
	loop.Next = func(ctx context.Context, s int) (*trainer.Job, error) {
		idx := order.Items(s)
		batch := make([]trainer.Example, len(idx))
		T := 0
		for k, i := range idx {
			batch[k] = exs[i]
			T += exs[i].Trainable()
		}
		mbs, err := trainer.Pack(batch, o.TokenBudget)
		if err != nil {
			return nil, err
		}
		return &trainer.Job{MicroBatches: mbs, Loss: NLL(T), Metrics: map[string]float64{"conversations": float64(len(idx))}}, nil
	}
	return loop.Run(ctx, prep.Done, end)
}

// NLL is the SFT loss of a step with T trainable tokens: each token
// contributes −ℓ_t/T, so dLoss/dℓ_t = −1/T.
func NLL(T int) trainer.LossFunc {
	return func(mb *trainer.MicroBatch, out trainer.Outputs) (map[string]float64, []float64, error) {
		grad := make([]float64, len(out.Logprob))
		loss := 0.0
		for i, lp := range out.Logprob {
			loss -= float64(lp) / float64(T)
			grad[i] = -1 / float64(T)
		}
		return map[string]float64{"loss": loss}, grad, nil
	}
}

// readConversations reads the i-th input on its own: JSON Lines chats
// (.jsonl, .json) or a Parquet trajectory file.
func readConversations(ctx context.Context, in *fileset.Set, i int) ([]trajectory.Group, error) {
	f, err := in.Open(ctx, i)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if name := f.Name; strings.HasSuffix(name, ".jsonl") || strings.HasSuffix(name, ".json") {
		gs, _, err := trajectory.ImportJSONL(ctx, f.Reader(), name)
		return gs, err
	}
	r, err := trajectory.NewReader(f.Name, f, f.Size)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var gs []trajectory.Group
	for {
		g, err := r.Next(ctx)
		if err == io.EOF {
			return gs, nil
		}
		if err != nil {
			return nil, err
		}
		gs = append(gs, g)
	}
}

// Load reads conversations (Parquet trajectory files, or .jsonl/.json chat
// files) and lays each out with its assistant turns trainable (all, or the
// last). Trajectories with an error, or below minReward when set, and
// conversations without an assistant turn are skipped and counted. Errors
// that blame the files match stageerr.ErrBadInput.
func Load(ctx context.Context, text *layout.Model, in *fileset.Set, turns string, minReward *float64, lopt layout.Options) ([]trainer.Example, int, error) {
	var groups []trajectory.Group
	for i := range in.Len() {
		gs, err := readConversations(ctx, in, i)
		if err != nil {
			return nil, 0, stageerr.Input(err)
		}
		groups = append(groups, gs...)
	}
	var exs []trainer.Example
	skipped := 0
	for _, g := range groups {
		for _, t := range g.Trajectories {
			if t.Error != "" || (minReward != nil && (t.Reward == nil || math.IsNaN(*t.Reward) || *t.Reward < *minReward)) {
				skipped++
				continue
			}
			msgs := append([]trajectory.Message(nil), t.Messages...)
			last := -1
			for i := range msgs {
				msgs[i].Trainable = false
				if msgs[i].Role == "assistant" {
					last = i
					msgs[i].Trainable = turns == "all"
				}
			}
			if last < 0 {
				skipped++
				continue
			}
			msgs[last].Trainable = true
			lay, err := text.Layout(ctx, msgs, t.Tools, lopt)
			if err != nil {
				return nil, 0, stageerr.BadInputf("group %s, trajectory %s: %w", g.ID, t.ID, err)
			}
			ex := trainer.Example{Seqs: lay.Sequences}
			if ex.Trainable() == 0 {
				skipped++
				continue
			}
			exs = append(exs, ex)
		}
	}
	return exs, skipped, nil
}

package sft

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/train/checkpoint"
	"github.com/hone-rl/hone/train/trainer"
	"github.com/spf13/pflag"
)

// Options configure an SFT run; the JSON form is the run's saved config.
type Options struct {
	trainer.Options
	Inputs *fileset.Set `json:"inputs"` // saved as its names
	// InputsSHA256 are the inputs' sha256, in order, set by Run: saved with
	// the run, so that a resume on files of the same names but other
	// contents (regenerated data) is refused rather than trained on in
	// another order.
	InputsSHA256 []string `json:"inputs_sha256,omitempty"`
	Turns        string   `json:"turns"`
	BatchSize    int      `json:"batch_size"`
	MinReward    *float64 `json:"min_reward,omitempty"`
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
	if err := trainer.CheckBestMetric(o.BestMetric, metricNames()); err != nil {
		return err
	}
	if o.Turns != "all" && o.Turns != "last" {
		return fmt.Errorf("--turns %q: want all or last", o.Turns)
	}
	if r := o.MinReward; r != nil && (math.IsNaN(*r) || math.IsInf(*r, 0)) {
		// No reward is below NaN, and the run's config (JSON) cannot hold
		// a value that is not finite.
		return fmt.Errorf("--min-reward %v must be a finite number", *r)
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
	defer base.Model.Close() // on a CUDA backend its memory is not the garbage collector's
	// The inputs are read before Setup touches the run folder, so that a
	// bad input leaves nothing behind; hashed before and after, so that
	// the run records the contents it trains (CheckUnchanged).
	files, err := checkpoint.HashSet(ctx, o.Inputs)
	if err != nil {
		return stageerr.Input(err) // the first reading of the inputs, as the load's
	}
	kw, _ := o.Kwargs()
	lens, err := o.SeqLengths(base)
	if err != nil {
		return err
	}
	rk := &trainer.RowKwargs{Flag: o.TemplateKwargs}
	data, err := Load(ctx, base.Text, o.Inputs, o.Turns, o.MinReward, layout.Options{Kwargs: kw}, rk, lens)
	if err != nil {
		return err
	}
	if err := lens.Report(log); err != nil {
		return err
	}
	held := trainer.HeldOut{Read: data.Read, Rows: data.HeldOut}
	if err := held.Report(log, o.Inputs.Names()); err != nil {
		return err
	}
	if err := checkpoint.CheckUnchanged(ctx, o.Inputs, files); err != nil {
		return err
	}
	if err := o.CheckEvalMetric(metricNames(), data.EnvMetrics, data.Complete, log); err != nil {
		return err
	}
	if n := len(data.NoAssistant); n > 0 {
		log.Warn(fmt.Sprintf("%d of %d conversations have no assistant turn to train and are left out: %s",
			n, data.Read, trainer.FirstRows(data.NoAssistant)))
	}
	exs, skipped := data.Examples, data.Skipped
	if len(exs) == 0 {
		return stageerr.BadInputf("nothing to train in %s: %d conversations skipped (errors, reward filter, no assistant turn or longer than --max-seq-len), %d held out (split val or test)", trainer.InputList(o.Inputs.Names()), skipped, len(data.HeldOut))
	}
	o.InputsSHA256 = nil
	for _, f := range files {
		o.InputsSHA256 = append(o.InputsSHA256, f.SHA256)
	}
	o.MayChange = rk.MayChange(o.MayChange)
	prep, err := trainer.Setup(ctx, base, &o.Options, o, o.Resuming(), log)
	if err != nil {
		return err
	}
	defer prep.Close()
	log.Info("sft examples", "conversations", len(exs), "skipped", skipped)
	per := o.BatchSize
	if per == 0 || per > len(exs) {
		per = len(exs)
	}
	order := trainer.Order{N: len(exs), PerStep: per, Seed: o.Seed, CrossEpochs: o.StepsCrossEpochs}
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

// isChatFile says whether an input is read as JSON Lines chats, by the
// ending of its name (of a URL's path: s3://b/chats.jsonl?endpoint=… is one).
func isChatFile(name string) bool {
	return fileset.HasExt(name, ".jsonl") || fileset.HasExt(name, ".json")
}

// isChatInput says whether an opened input is read as JSON Lines chats:
// by its name's ending (isChatFile), or, for a name that ends in neither
// that nor .parquet (stdin "-", a pipe such as bash's <(…)), by its
// content, which then does not start with Parquet's magic "PAR1".
func isChatInput(f *fileset.File) bool {
	if isChatFile(f.Name) {
		return true
	}
	return !fileset.HasExt(f.Name, ".parquet") && !trajectory.StartsWithMagic(f)
}

// readConversations reads the i-th input on its own: JSON Lines chats
// (isChatInput), with the line of each trajectory (lines, indexed as gs),
// or a Parquet trajectory file (lines nil).
func readConversations(ctx context.Context, in *fileset.Set, i int) (gs []trajectory.Group, lines [][]trajectory.SourceLine, err error) {
	f, err := in.Open(ctx, i)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if isChatInput(f) {
		gs, res, err := trajectory.ImportJSONL(ctx, f.Reader(), f.Name)
		if lines = res.Origins; lines == nil {
			lines = [][]trajectory.SourceLine{} // a chat file of no lines is still one
		}
		return gs, lines, err
	}
	r, err := trajectory.NewReader(f.Name, f, f.Size)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	for {
		g, err := r.Next(ctx)
		if err == io.EOF {
			return gs, nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
		gs = append(gs, g)
	}
}

// trajectoryNames names each trajectory of gs, read from input file, as
// the warnings and errors about it do (indexed as gs): "FILE:LINE" and
// the ids the line gives itself for a chat file (lines not nil:
// trajectory.SourceLine.Name), else "FILE row N (group G, trajectory T)";
// and, for the message on a group of mixed splits, which names the group
// itself, the same without the group in a Parquet file.
// Load passes file as messages show it (fileset.DisplayName): an
// object's bucket query named no row and printed the store's address for
// each.
func trajectoryNames(file string, gs []trajectory.Group, lines [][]trajectory.SourceLine) (names, inGroup [][]string) {
	row := 0
	for gi, g := range gs {
		var n, ing []string
		for ti := range g.Trajectories {
			t := &g.Trajectories[ti]
			if lines != nil {
				n = append(n, lines[gi][ti].Name(file, t))
				ing = append(ing, n[ti])
				continue
			}
			n = append(n, fmt.Sprintf("%s row %d (group %s, trajectory %s)", file, row, g.ID, t.ID))
			ing = append(ing, fmt.Sprintf("%s row %d (trajectory %s)", file, row, t.ID))
			row++
		}
		names, inGroup = append(names, n), append(inGroup, ing)
	}
	return names, inGroup
}

// Data are the examples Load lays out and what it learnt of the inputs.
type Data struct {
	Examples []trainer.Example
	// Skipped counts the conversations not trained: errors, below
	// --min-reward, or without an assistant turn in any history.
	Skipped int
	// Read counts the conversations (trajectories) of the inputs, and
	// NoAssistant names those skipped for want of an assistant turn to
	// train (most likely another shape of data, or of role name), each
	// as "FILE row N (group G, trajectory T)" ("FILE:LINE" and the ids
	// the line gives in a chat file: trajectoryNames), with the keys of a
	// JSON line that has no "messages" at all.
	Read        int
	NoAssistant []string
	// HeldOut names the trajectories left out for their split (val or
	// test: trainer.IsHeldOut), as NoAssistant does; they are not
	// counted in Skipped.
	HeldOut []string
	// EnvMetrics are the names of the metrics the input trajectories
	// report (sorted), and Complete whether every input is a Parquet
	// trajectory file, whose metrics are then the environment's (a JSON
	// Lines chat file need not come from an environment).
	EnvMetrics []string
	Complete   bool
}

// Load reads conversations (Parquet trajectory files, or .jsonl/.json chat
// files), leaves out and names those of a held-out split (val, test)
// (refusing a group of both held-out rows and rows to train:
// trainer.GroupSplits), and
// lays each other out with its assistant turns trainable (all, or the
// last of each history): the main history and every additional history
// each a sequence of its own (trainer.LayoutHistories, as GRPO does), so
// that a step's token mean covers them all. Trajectories with an error,
// or below minReward when set, and conversations without an assistant
// turn in any history are skipped and counted, and so are those lens
// leaves out (lens.Check; nil: no check), which the caller then reports
// (lens.Report). Errors that blame the files match stageerr.ErrBadInput.
func Load(ctx context.Context, text *layout.Model, in *fileset.Set, turns string, minReward *float64, lopt layout.Options, rk *trainer.RowKwargs, lens *trainer.Lengths) (Data, error) {
	d := Data{Complete: true}
	var groups []trajectory.Group
	var names, inGroup [][]string // each trajectory's name in messages (trajectoryNames)
	for i := range in.Len() {
		gs, lines, err := readConversations(ctx, in, i)
		if err != nil {
			return Data{}, stageerr.Input(err)
		}
		if lines != nil {
			d.Complete = false
		}
		groups = append(groups, gs...)
		n, ing := trajectoryNames(fileset.DisplayName(in.Name(i)), gs, lines)
		names, inGroup = append(names, n...), append(inGroup, ing...)
	}
	var mixed []string
	for gi, g := range groups {
		var splits trainer.GroupSplits
		for ti, t := range g.Trajectories {
			d.Read++
			name := names[gi][ti]
			splits.Add(inGroup[gi][ti], t.Split)
			for k := range t.Metrics {
				if !slices.Contains(d.EnvMetrics, k) {
					d.EnvMetrics = append(d.EnvMetrics, k)
				}
			}
			if trainer.IsHeldOut(t.Split) {
				d.HeldOut = append(d.HeldOut, name)
				continue
			}
			if t.Error != "" || (minReward != nil && (t.Reward == nil || math.IsNaN(*t.Reward) || *t.Reward < *minReward)) {
				d.Skipped++
				continue
			}
			tt, marked := t, marksTurns(&t)
			tt.Messages = sftTurns(t.Messages, turns, marked)
			tt.AdditionalHistories = make([]trajectory.History, len(t.AdditionalHistories))
			for k, h := range t.AdditionalHistories {
				tt.AdditionalHistories[k] = trajectory.History{Messages: sftTurns(h.Messages, turns, marked), Tools: h.Tools}
			}
			ropt, err := rk.Options(name, &t, lopt)
			if err != nil {
				return Data{}, err
			}
			seqs, err := trainer.LayoutHistories(ctx, text, &tt, ropt)
			if err != nil {
				return Data{}, stageerr.BadInputf("%s: %w", name, err)
			}
			ex := trainer.Example{Seqs: seqs}
			if ex.Trainable() == 0 {
				d.Skipped++
				d.NoAssistant = append(d.NoAssistant, name+noMessages(&t))
				continue
			}
			if lens != nil && lens.Check(&ex, name) {
				d.Skipped++
				continue
			}
			d.Examples = append(d.Examples, ex)
		}
		if m := splits.Mixed(g.ID); m != "" {
			mixed = append(mixed, m)
		}
	}
	if err := trainer.MixedSplitsError(mixed); err != nil {
		return Data{}, err
	}
	slices.Sort(d.EnvMetrics)
	return d, nil
}

// noMessages is, for a trajectory without messages in any history, what
// the skip warning adds: the keys its JSON line has instead (ImportJSONL
// keeps a key it does not know as metadata "jsonl.KEY"), so that TRL's
// {"prompt", "completion"} or ShareGPT's {"conversations"} is told apart
// from a conversation that merely lacks an answer. "" otherwise.
func noMessages(t *trajectory.Trajectory) string {
	if len(t.Messages) > 0 || slices.ContainsFunc(t.AdditionalHistories, func(h trajectory.History) bool { return len(h.Messages) > 0 }) {
		return ""
	}
	var keys []string
	for k := range t.Metadata {
		if key, ok := strings.CutPrefix(k, "jsonl."); ok {
			keys = append(keys, key)
		}
	}
	if len(keys) == 0 {
		return ": no messages"
	}
	slices.Sort(keys)
	return fmt.Sprintf(`: no "messages", only %s (sft reads {"messages": [...]} per line)`, strings.Join(keys, ", "))
}

// marksTurns says whether a trajectory marks any of its assistant turns
// trainable, in any history. hone-collect and hone-proxy mark the turns
// the policy produced and leave an assistant message the agent wrote or
// changed itself unmarked, as context that GRPO does not train; SFT then
// imitates the marked turns alone. A trajectory that marks none (a plain
// chat file, as TRL takes one) has only unmarked turns, all of them the
// assistant's to imitate.
func marksTurns(t *trajectory.Trajectory) bool {
	marked := func(ms []trajectory.Message) bool {
		return slices.ContainsFunc(ms, func(m trajectory.Message) bool { return m.Role == "assistant" && m.Trainable })
	}
	return marked(t.Messages) || slices.ContainsFunc(t.AdditionalHistories, func(h trajectory.History) bool { return marked(h.Messages) })
}

// sftTurns is a copy of a history's messages with the assistant turns
// SFT trains marked trainable (all of them, or the last) and no other;
// with marked (marksTurns), only the turns the history marks trainable
// are candidates, the last being the last marked one.
func sftTurns(ms []trajectory.Message, turns string, marked bool) []trajectory.Message {
	out := append([]trajectory.Message(nil), ms...)
	last := -1
	for i := range out {
		candidate := out[i].Role == "assistant" && (!marked || out[i].Trainable)
		out[i].Trainable = false
		if candidate {
			last = i
			out[i].Trainable = turns == "all"
		}
	}
	if last >= 0 {
		out[last].Trainable = true
	}
	return out
}

// metricNames are the metrics of an SFT step's row.
func metricNames() []string {
	return append(trainer.LoopMetrics(), "conversations", "loss")
}

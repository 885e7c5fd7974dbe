package trainer

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/format/modelfolder"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/train/checkpoint"
	"github.com/hone-rl/hone/train/model"
	"github.com/spf13/pflag"
)

// Options are what every training job shares: the model, the run folder,
// the LoRA shape, the optimizer and schedule, batching and checkpoints. The
// JSON form is saved with every checkpoint as the run's exact config.
type Options struct {
	Model string `json:"model"`
	Out   string `json:"out"`
	// OutLocal, when set, is the local folder the run folders are written
	// in while Out names an object-store folder they are published to
	// (hone-train --out-cache): the saved config keeps Out, so a run
	// resumed from another cache matches.
	OutLocal string `json:"-"`
	// RunLocked says that the caller holds the run folder's lock
	// (checkpoint.Run.Lock) for the whole job, so LoadBase and Setup do
	// not take it again (a second flock of the file would fail): hone-train
	// with --out s3://… takes it before pulling into the folder, and keeps
	// it until the last publish.
	RunLocked   bool     `json:"-"`
	Name        string   `json:"run"`
	Resume      bool     `json:"-"`
	InitAdapter string   `json:"init_adapter,omitempty"`
	Rank        int      `json:"rank"`
	Alpha       float64  `json:"alpha"`
	RSLoRA      bool     `json:"rslora"`
	Targets     []string `json:"targets"`
	Seed        uint64   `json:"seed"`

	LR       float64 `json:"lr"`
	Schedule string  `json:"lr_schedule"`
	Warmup   int     `json:"warmup_steps"`
	MinLR    float64 `json:"min_lr"`
	// ScheduleSteps is the run's planned number of steps (optimizer
	// updates with --norm art), the horizon of the cosine schedule. 0 takes the step this invocation
	// trains to (with --norm art on files, the updates grpojob counts to
	// it ahead), which is right for one long invocation but not for
	// incremental training (--watch-dir with --steps 1 per round), where
	// each invocation would otherwise see its own end as the horizon and
	// the schedule would decay at every round.
	ScheduleSteps int     `json:"schedule_steps,omitempty"`
	Beta1         float64 `json:"adam_beta1"`
	Beta2         float64 `json:"adam_beta2"`
	AdamEps       float64 `json:"adam_eps"`
	WeightDecay   float64 `json:"weight_decay"`
	MaxGradNorm   float64 `json:"max_grad_norm"`

	TokenBudget int `json:"token_budget"`
	// MaxSeqLen is --max-seq-len: trajectories with a longer sequence are
	// left out (Lengths). Saved only when set, so that configs from
	// before the flag compare equal, and a resume that adds it (leaving
	// out rows the run trained) differs.
	MaxSeqLen     int  `json:"max_seq_len,omitempty"`
	Checkpointing bool `json:"gradient_checkpointing"`
	// BF16GateUp is model.TrainOptions.GateUpBF16. It changes the step's
	// bits where it applies, so a resumed run keeps its value (saved only
	// when set: configs from before the flag compare equal).
	BF16GateUp bool `json:"bf16_gate_up,omitempty"`
	Steps      int  `json:"steps"`
	Epochs     int  `json:"epochs"`
	// StepsCrossEpochs is Order.CrossEpochs, not a flag: false for a run
	// started now; true for one whose saved config lacks the key (saved
	// before each epoch ended on a step of its own), which keeps its data
	// order when resumed (Setup).
	StepsCrossEpochs bool `json:"steps_cross_epochs"`

	SaveEvery  int    `json:"save_every"`
	KeepLast   int    `json:"keep_last"`
	BestMetric string `json:"best_metric,omitempty"`
	BestMode   string `json:"best_mode"`

	TemplateKwargs string `json:"chat_template_kwargs,omitempty"`
	// KwargsIdle records that no call of the run has laid a row out under
	// TemplateKwargs yet (every row read recorded its own: RowKwargs), so
	// that the value saved is no choice of the user's and the first call
	// whose flag lays out rows may give any (keepIdleKwargs). Set by
	// Setup and CheckDeferredKwargs; a config saved before it was kept
	// lacks it, and its value stays compared.
	KwargsIdle bool `json:"chat_template_kwargs_idle,omitempty"`

	// DType is how the base model's matrices are held: "float32" or
	// "bfloat16" (normalised by Validate). Configs saved before the flag
	// existed have no "dtype" and mean float32.
	DType string `json:"dtype"`

	// Device, Compute and Threads are the command's --device, --compute and
	// --threads, from which it built Backend (set by the caller, not by
	// AddFlags). They are saved with each step because a resumed run ends
	// bit-identical to an uninterrupted one only on the same backend
	// configuration (OpenBLAS, for one, sums in another order with another
	// thread count); a resume that gives others is noted in the log
	// (backendChanges), not refused, since moving a run to another machine
	// is legitimate. Left empty (a library caller, a run saved before these
	// keys) they are not saved, and nothing is compared.
	Device  string `json:"device,omitempty"`
	Compute string `json:"compute,omitempty"`
	Threads int    `json:"threads,omitempty"`

	// Set by the caller (cmd builds the backend), not by flags, and not
	// part of the saved config.
	Backend kernels.Backend `json:"-"` // where the model is loaded and trained
	Log     *slog.Logger    `json:"-"` // one line per step, resume and skip notices, the end summary; nil: none
	// MayChange names the top-level keys of the saved config that a resumed
	// run may change besides "steps", "epochs", the backend keys and the
	// checkpoint options (checkpointKeys): GRPO's "inputs", since
	// new trajectory files start a new session of the same run.
	MayChange []string `json:"-"`
	// deferKwargs is set by DeferKwargs: a resume's new checkpoint options
	// wait for CheckDeferredKwargs, which may still refuse the call.
	deferKwargs bool
}

// ScheduleStepsUsage is the help of --schedule-steps, grows naming how a
// run of the job grows over several calls: each job names its own ways
// (sft has no --watch-dir and refuses new files on --resume), and grpo
// replaces the shared help with its own.
func ScheduleStepsUsage(grows string) string {
	return "planned steps of the whole run (optimizer updates with grpo --norm art, one per packed row), the cosine schedule's horizon (0: the step this invocation reaches; set it when a run grows over several calls: " + grows + ")"
}

// AddFlags registers the shared flags with their defaults; lr is the job's
// default learning rate.
func (o *Options) AddFlags(fs *pflag.FlagSet, lr float64) {
	fs.StringVar(&o.Model, "model", "", "base model folder (config.json, safetensors, tokenizer, chat template)")
	fs.StringVar(&o.DType, "dtype", string(model.DTypeFloat32), "base weights in memory: float32, or bfloat16 (half the memory; the same rounding as hone-serve --dtype bfloat16, so the trainer's logprobs match a bfloat16 sampler's; computes in float32)")
	fs.StringVar(&o.Out, "out", "adapters", "folder holding run folders")
	fs.StringVar(&o.Name, "run", "", "run name: checkpoints go to OUT/RUN/step-NNNNNN")
	fs.BoolVar(&o.Resume, "resume", false, "continue the run from its latest checkpoint (a run folder with none starts a fresh run, with a warning naming it)")
	fs.StringVar(&o.InitAdapter, "init-adapter", "", "start from this PEFT adapter folder (e.g. an SFT step) instead of a fresh LoRA")
	fs.IntVar(&o.Rank, "rank", 8, "LoRA rank")
	fs.Float64Var(&o.Alpha, "alpha", 16, "LoRA alpha (scale alpha/rank)")
	fs.BoolVar(&o.RSLoRA, "rslora", false, "scale alpha/√rank")
	fs.StringSliceVar(&o.Targets, "targets", []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}, "LoRA target projections")
	fs.Uint64Var(&o.Seed, "seed", 0, "seed of the LoRA init and the data order")
	fs.Float64Var(&o.LR, "lr", lr, "peak learning rate")
	fs.StringVar(&o.Schedule, "lr-schedule", "constant", "constant, warmup (linear warm-up then constant) or cosine (warm-up then cosine decay to --min-lr)")
	fs.IntVar(&o.Warmup, "warmup-steps", 0, "steps of linear warm-up (optimizer updates with grpo --norm art), with --lr-schedule warmup or cosine (constant has none); a step with nothing to train counts, as transformers' schedulers count every step (under grpo --norm art it takes no update, so it does not); under cosine, a warm-up that reaches the horizon's last step (--schedule-steps, else the step the call trains to, with grpo --norm art the updates counted to it) is warned about: the learning rate never decays")
	fs.Float64Var(&o.MinLR, "min-lr", 0, "final learning rate of the cosine schedule")
	fs.IntVar(&o.ScheduleSteps, "schedule-steps", 0, ScheduleStepsUsage("--resume with more --steps"))
	fs.Float64Var(&o.Beta1, "adam-beta1", 0.9, "AdamW β1")
	fs.Float64Var(&o.Beta2, "adam-beta2", 0.99, "AdamW β2 (ART: 0.99)")
	fs.Float64Var(&o.AdamEps, "adam-eps", 1e-8, "AdamW ε")
	fs.Float64Var(&o.WeightDecay, "weight-decay", 0.1, "AdamW decoupled weight decay (ART: 0.1)")
	fs.Float64Var(&o.MaxGradNorm, "max-grad-norm", 0.1, "clip the global gradient norm to this (ART: 0.1; ≤ 0: off)")
	fs.IntVar(&o.TokenBudget, "token-budget", 8192, "tokens per micro-batch; gradients accumulate over a step's micro-batches (a trajectory with more tokens is a micro-batch of its own, warned once)")
	fs.IntVar(&o.MaxSeqLen, "max-seq-len", 0, "leave out, with one warning naming the first rows, trajectories with a sequence of more tokens than this, as ART's SFT drops rows over its max_seq_length (its RL truncates them instead) (0: none left out, and a sequence past the model's context, max_position_embeddings, is refused)")
	fs.BoolVar(&o.Checkpointing, "gradient-checkpointing", false, "recompute block activations in backward (less memory)")
	fs.BoolVar(&o.BF16GateUp, "bf16-gate-up", false, "with --device cuda --compute bf16, hold the MLP's gate and up activations as bfloat16, as PyTorch's bf16 autocast does: half their memory (17 GB at 8192 tokens on a 7B), less traffic, logprob error about autocast's; no effect elsewhere")
	fs.IntVar(&o.Steps, "steps", 0, "steps to train on the inputs (0: --epochs over them), counted from the run's start or, for grpo, from the start of the inputs' session")
	fs.IntVar(&o.Epochs, "epochs", 1, "passes over the inputs when --steps is 0")
	fs.IntVar(&o.SaveEvery, "save-every", 1, "save a checkpoint every N steps, and the last step (0: only the last step; SIGINT or SIGTERM saves the last finished step too)")
	fs.IntVar(&o.KeepLast, "keep-last", 0, "step folders to keep (0: all); latest and best are always kept, and with an eval --best-metric every step not yet evaluated")
	fs.StringVar(&o.BestMetric, "best-metric", "", "metric picking the best step (kept, and named by OUT/RUN/best): a training metric such as reward_mean, or an eval metric such as val/reward that hone-inspect log-eval records after each step is evaluated (steps not yet evaluated are kept); a name no row can have is refused")
	fs.StringVar(&o.BestMode, "best-mode", "", "max or min: which --best-metric value is best (default: min for a metric whose name ends in loss, as Hugging Face's Trainer takes it, else max)")
	fs.StringVar(&o.TemplateKwargs, "chat-template-kwargs", "", `JSON object of chat template kwargs the trajectories were served with, e.g. {"enable_thinking":false}; rows that record theirs (metadata hone.chat_template_kwargs: hone-collect --chat-template-kwargs, the recording proxy) are laid out under those without it, each row under its own when they differ, and a value that differs from a row's is refused (exit 2)`)
}

// Validate checks the shared options.
func (o *Options) Validate() error {
	if o.Model == "" {
		return fmt.Errorf("--model is required")
	}
	if o.Name == "" {
		return fmt.Errorf("--run is required")
	}
	if err := runfolder.CheckRun(o.Name); err != nil {
		// The run folder is OUT/RUN and hone-serve serves it as RUN and
		// RUN@N: a name it cannot serve, or one that is a path, is refused
		// before anything is written.
		return fmt.Errorf("--run: %w", err)
	}
	if o.DType == "" {
		o.DType = string(model.DTypeFloat32)
	}
	dt, err := model.ParseWeightDType(o.DType)
	if err != nil {
		return fmt.Errorf("--%w", err)
	}
	o.DType = string(dt) // saved in one spelling, so resume compares names, not aliases
	if o.InitAdapter == "" {
		// The shape of a fresh adapter, checked before anything is
		// written (an adapter given by --init-adapter has its own).
		if o.Rank <= 0 {
			return fmt.Errorf("--rank %d must be positive", o.Rank)
		}
		if !(o.Alpha > 0) || math.IsInf(o.Alpha, 0) {
			return fmt.Errorf("--alpha %v must be positive", o.Alpha)
		}
		if len(o.Targets) == 0 {
			return fmt.Errorf("--targets: give at least one projection")
		}
		seen := map[model.Module]string{}
		for _, t := range o.Targets {
			m, err := model.ParseModule(t)
			if err != nil {
				return fmt.Errorf("--targets: %w", err)
			}
			if prev, dup := seen[m]; dup {
				return fmt.Errorf("--targets names %s twice (%q and %q)", m, prev, t)
			}
			seen[m] = t
		}
	}
	if o.BestMode == "" {
		// Resolved here, so the run's saved config holds what it prunes
		// by: a higher loss is no better step.
		o.BestMode = "max"
		if strings.HasSuffix(o.BestMetric, "loss") {
			o.BestMode = "min"
		}
	}
	if o.BestMode != "max" && o.BestMode != "min" {
		return fmt.Errorf("--best-mode %q: want max or min", o.BestMode)
	}
	if o.ScheduleSteps < 0 {
		return fmt.Errorf("--schedule-steps %d must not be negative", o.ScheduleSteps)
	}
	// Neither has a meaning below 0 (the help gives "every N steps" and
	// "0: all"): taken, a negative --save-every saved every step and a
	// negative --keep-last kept every step, not what was asked for.
	if o.SaveEvery < 0 {
		return fmt.Errorf("--save-every %d must not be negative", o.SaveEvery)
	}
	if o.KeepLast < 0 {
		return fmt.Errorf("--keep-last %d must not be negative (0 keeps every step)", o.KeepLast)
	}
	if o.MaxSeqLen < 0 {
		return fmt.Errorf("--max-seq-len %d must not be negative", o.MaxSeqLen)
	}
	if o.TokenBudget <= 0 || o.Epochs <= 0 || o.Steps < 0 {
		return fmt.Errorf("--token-budget %d and --epochs %d must be positive, --steps %d not negative", o.TokenBudget, o.Epochs, o.Steps)
	}
	if _, err := o.Kwargs(); err != nil {
		return err
	}
	// --alpha too with --init-adapter, which ignores it but saves it in
	// the run's config.
	if err := CheckFinite(map[string]float64{
		"alpha": o.Alpha, "lr": o.LR, "min-lr": o.MinLR, "adam-beta1": o.Beta1, "adam-beta2": o.Beta2, "adam-eps": o.AdamEps,
		"weight-decay": o.WeightDecay, "max-grad-norm": o.MaxGradNorm,
	}); err != nil {
		return err
	}
	if err := o.checkAdamW(); err != nil {
		return err
	}
	return o.Sched(0).Validate()
}

// checkAdamW refuses the optimizer values torch.optim.AdamW refuses: a β
// outside [0, 1), a negative ε or weight decay. Taken, a β of 1 makes the
// bias correction 1 − β^t zero and the first update NaN, which the step
// then blamed on --lr and the rewards; a β above 1 or a negative decay
// trains on, away from any AdamW.
func (o *Options) checkAdamW() error {
	for _, b := range []struct {
		name string
		v    float64
	}{{"adam-beta1", o.Beta1}, {"adam-beta2", o.Beta2}} {
		if b.v < 0 || b.v >= 1 {
			return fmt.Errorf("--%s %v must be in [0, 1), as torch.optim.AdamW's betas", b.name, b.v)
		}
	}
	if o.AdamEps < 0 || o.WeightDecay < 0 {
		return fmt.Errorf("--adam-eps %v and --weight-decay %v must not be negative", o.AdamEps, o.WeightDecay)
	}
	return nil
}

// CheckFinite refuses the first flag, by name, whose value is NaN or
// ±Inf: the run's config is saved as JSON, which cannot hold them, and
// none of the training options means anything there.
func CheckFinite(flags map[string]float64) error {
	for _, name := range slices.Sorted(maps.Keys(flags)) {
		if v := flags[name]; math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("--%s %v must be a finite number", name, v)
		}
	}
	return nil
}

// Kwargs parses --chat-template-kwargs.
func (o *Options) Kwargs() (map[string]any, error) {
	if o.TemplateKwargs == "" {
		return nil, nil
	}
	var kw map[string]any
	if err := json.Unmarshal([]byte(o.TemplateKwargs), &kw); err != nil {
		return nil, fmt.Errorf("--chat-template-kwargs: %w", err)
	}
	return kw, nil
}

// Sched is the learning-rate schedule over total optimizer updates, or over
// ScheduleSteps when that is set.
func (o *Options) Sched(total int) Schedule {
	if o.ScheduleSteps > 0 {
		total = o.ScheduleSteps
	}
	return Schedule{Kind: o.Schedule, LR: o.LR, Warmup: o.Warmup, Total: total, MinLR: o.MinLR}
}

// AdamWParams are the optimizer's hyperparameters (LR set per update).
func (o *Options) AdamWParams() kernels.AdamWParams {
	return kernels.AdamWParams{LR: float32(o.LR), Beta1: float32(o.Beta1), Beta2: float32(o.Beta2), Eps: float32(o.AdamEps), WeightDecay: float32(o.WeightDecay)}
}

// Base is the model a run trains: its weights and its text side
// (tokenizer and chat template), loaded from the model folder.
type Base struct {
	Model *model.Model
	Text  *layout.Model
	// Context is the longest sequence the model takes (hfconfig.Config.MaxModelLen).
	Context int
}

// LoadBase loads the model folder o.Model. A folder that is missing or does
// not hold a model this build reads is bad input (stageerr.ErrBadInput), as is the
// rest of the run's input; loading it before Setup lets a run check its
// inputs before it creates anything in the run folder. A run whose lock
// another process holds fails first, with ErrLocked, loading nothing
// (checkpoint.Run.CheckUnlocked).
func LoadBase(be kernels.Backend, o *Options) (*Base, error) {
	// A lock the caller holds (o.RunLocked) would read as another's.
	if !o.RunLocked {
		if err := (&checkpoint.Run{Dir: o.RunDir()}).CheckUnlocked(); err != nil {
			return nil, err
		}
	}
	f, err := modelfolder.Open(o.Model, modelfolder.All)
	if err != nil {
		return nil, stageerr.Input(err)
	}
	m, err := model.FromFolder(f, be, model.WeightDType(o.DType))
	_ = f.Close() // the model holds its own copy of the weights: unmap them now
	if err != nil {
		return nil, stageerr.Input(fmt.Errorf("model folder %s: %w", o.Model, err))
	}
	if o.Log != nil {
		for _, n := range f.Notes() {
			o.Log.Info(n)
		}
	}
	// The text side carries the folder's stop ids, the ones serve stops on.
	return &Base{Model: m, Text: layout.FromFolder(f), Context: f.Config.MaxModelLen()}, nil
}

// Prepared is a run ready to train (what Setup returns): model, text layout, adapter, optimizer and
// run folder (locked), and how many steps are already done.
type Prepared struct {
	Model  *model.Model
	Text   *layout.Model
	Ckpt   *checkpoint.Run
	Ad     *model.Adapter
	Opt    *AdamW
	Done   int              // steps already done (0 for a fresh run)
	State  checkpoint.State // of the restored step
	unlock func()
	// applyDeferred applies a resume's new checkpoint options, which Setup
	// leaves to CheckDeferredKwargs where the job set DeferKwargs; nil
	// when there is nothing left to apply.
	applyDeferred func() error
	// kwargsIdle is the resumed run's saved KwargsIdle, for
	// CheckDeferredKwargs.
	kwargsIdle bool
}

// Close frees the optimizer's and the adapter's memory on the model's
// backend and releases the run folder's lock. The model is the caller's
// (Base) and stays open.
func (p *Prepared) Close() {
	if p.Opt != nil {
		p.Opt.Free()
		p.Opt = nil
	}
	if p.Ad != nil {
		p.Ad.Free()
		p.Ad = nil
	}
	if p.unlock != nil {
		p.unlock()
		p.unlock = nil
	}
}

// RunDir is the local run folder, OUT/RUN (or under --out-cache).
func (o *Options) RunDir() string {
	out := o.Out
	if o.OutLocal != "" {
		out = o.OutLocal
	}
	return filepath.Join(out, o.Name)
}

// CheckEvalMetric checks an eval --best-metric against the environment
// metrics of the run's inputs (train: the job's metrics; env; complete: whether they are all the
// environment reports) and the eval.jsonl the run folder may already have
// (see the function CheckEvalMetric). A name that cannot be checked yet is
// logged once at warn level. A refusal is a usage error.
func (o *Options) CheckEvalMetric(train, env []string, complete bool, log *slog.Logger) error {
	if o.BestMetric == "" || !checkpoint.IsEvalMetric(o.BestMetric) {
		return nil
	}
	eval, err := (&checkpoint.Run{Dir: o.RunDir()}).ReadEval()
	if err != nil {
		return err
	}
	checked, err := CheckEvalMetric(o.BestMetric, train, env, complete, eval)
	if err != nil {
		return stageerr.Usage(err)
	}
	if !checked && log != nil {
		log.Warn("--best-metric names an environment metric that the inputs cannot confirm: hone-inspect log-eval warns if the split it logs lacks it",
			"best_metric", o.BestMetric)
	}
	return nil
}

// repairEval drops the eval rows of steps after last (checkpoint.Run.RepairEval)
// and says so: they are results the user logged. A best pointer naming
// such a step goes too: that adapter is trained again, and the next prune
// with --best-metric names the best of what is evaluated then; left, it
// would name the redone step for a result it never had.
func repairEval(run *checkpoint.Run, last int, log *slog.Logger) error {
	dropped, err := run.RepairEval(last)
	if err != nil {
		return err
	}
	if len(dropped) > 0 && log != nil {
		log.Warn("dropped the eval rows of steps after the one the run continues from: they evaluated adapters that are trained again",
			"run", run.Dir, "from", runfolder.StepName(last), "eval_steps", dropped, "file", filepath.Join(run.Dir, runfolder.EvalName))
	}
	best, removed, err := run.DropBestAfter(last)
	if err != nil {
		return err
	}
	if removed && log != nil {
		log.Warn("removed the best pointer: it named a step after the one the run continues from, which is trained again",
			"run", run.Dir, "from", runfolder.StepName(last), "best_was", runfolder.StepName(best))
	}
	return nil
}

// lockRun takes run's lock, unless the caller holds it (o.RunLocked), who
// then releases it too.
func lockRun(run *checkpoint.Run, o *Options) (unlock func(), err error) {
	if o.RunLocked {
		return func() {}, nil
	}
	return run.Lock()
}

// ResumeMode says what Setup does with the run folder's steps.
type ResumeMode int

const (
	// Fresh starts a new run; a run folder with steps is refused.
	Fresh ResumeMode = iota
	// Resume (--resume) continues the run's latest step. A run folder
	// without one starts fresh with a warning naming it: that is the
	// first round of a loop that always passes --resume (the README's),
	// but also a mistyped --run, which transformers' Trainer refuses
	// (resume_from_checkpoint finding no checkpoint) and which must not
	// train from scratch unnoticed.
	Resume
	// ResumeQuiet (--watch-dir) continues the latest step, or starts a
	// fresh run without a word: every call of incremental training is
	// the same command, the first included.
	ResumeQuiet
)

// Resuming is the ResumeMode of o.Resume: Resume when set, else Fresh.
func (o *Options) Resuming() ResumeMode {
	if o.Resume {
		return Resume
	}
	return Fresh
}

// Setup takes the run folder's lock over base and either restores the
// run's latest step (resume must not be Fresh when the run folder has
// one; config, the job's options, must then equal the saved config but
// for "steps", "epochs", o.MayChange, the backend keys and the checkpoint
// options, else a usage error names each option that differs) or starts
// a fresh adapter. Checkpoint options that differ become the run's
// (applyCheckpointChanges).
func Setup(ctx context.Context, base *Base, o *Options, config any, resume ResumeMode, log *slog.Logger) (*Prepared, error) {
	m := base.Model
	run := &checkpoint.Run{Dir: o.RunDir()}
	var initAd *model.Adapter
	if o.InitAdapter != "" {
		// A fresh run reads its --init-adapter before the lock makes the
		// run folder, so that a bad path leaves no folder behind. (A run
		// with steps resumes from its own.)
		if _, has, err := run.Latest(); err == nil && !has {
			if initAd, err = model.ReadAdapter(o.InitAdapter, &m.Config); err != nil {
				return nil, stageerr.Input(fmt.Errorf("--init-adapter: %w", err))
			}
		}
	}
	unlock, err := lockRun(run, o)
	if err != nil {
		return nil, err
	}
	prep := &Prepared{Model: m, Text: base.Text, Ckpt: run, unlock: unlock}
	ok := false
	defer func() {
		if !ok {
			prep.Close()
		}
	}()
	if err := run.CleanTemp(); err != nil {
		return nil, err
	}
	last, has, err := run.Latest()
	if err != nil {
		return nil, err
	}
	if has && resume == Fresh {
		return nil, stageerr.Usagef("%s already has %s: pass --resume to continue it, or choose another --run", run.Dir, runfolder.StepName(last))
	}
	if has {
		if err := resumeRun(run, last, prep, o, config, log); err != nil {
			return nil, err
		}
	} else if err := startFresh(run, prep, o, initAd, resume, log); err != nil {
		return nil, err
	}
	ok = true
	return prep, nil
}

// resumeRun is Setup's restore of the run's latest step, last, into
// prep: config must match the saved config as Setup says.
func resumeRun(run *checkpoint.Run, last int, prep *Prepared, o *Options, config any, log *slog.Logger) error {
	m := prep.Model
	saved, err := run.ReadConfig(last)
	if err != nil {
		return err
	}
	o.StepsCrossEpochs = savedCrossEpochs(saved)
	if o.StepsCrossEpochs && log != nil {
		log.Info("the run was started before each epoch ended on a step of its own: it keeps its data order, where a step may cross into the next epoch", "run", run.Dir)
	}
	now, err := json.MarshalIndent(savedConfig{config}, "", "  ")
	if err != nil {
		return err
	}
	for _, c := range backendChanges(saved, now) {
		if log != nil {
			log.Warn("resuming with another backend configuration than the run's: the steps from here may round differently from an uninterrupted run",
				"option", c.key, "run_has", c.run, "command_gives", c.now, "run", run.Dir)
		}
	}
	prep.kwargsIdle = savedKwargsIdle(saved)
	mayChange := o.MayChange
	if prep.kwargsIdle {
		mayChange = append(slices.Clone(mayChange), kwargsKey)
	}
	if err := refuseChanges(run, last, saved, now, mayChange); err != nil {
		return err
	}
	keepIdleKwargs(saved, prep.kwargsIdle, o)
	prep.Ad, prep.Opt, prep.State, err = Restore(run, last, m, o.AdamWParams(), o.MaxGradNorm)
	if err != nil {
		return err
	}
	prep.Done = last
	if err := run.DropStepsAfter(last); err != nil {
		return err
	}
	if err := run.RepairMetrics(last, prep.State.Metrics); err != nil {
		return err
	}
	if err := repairEval(run, last, log); err != nil {
		return err
	}
	// A call that DeferKwargs may yet refuse changes nothing of the
	// run's: its new --keep-last pruned steps before the refusal.
	apply := func() error { return applyCheckpointChanges(run, last, saved, now, o, log) }
	if o.deferKwargs {
		prep.applyDeferred = apply
	} else if err := apply(); err != nil {
		return err
	}
	if log != nil {
		log.Info("resuming", "run", run.Dir, "from", runfolder.StepName(last))
	}
	return nil
}

// startFresh is Setup's start of a fresh run in prep: a new adapter (or
// initAd, the --init-adapter), and the run folder's leftovers cleared.
func startFresh(run *checkpoint.Run, prep *Prepared, o *Options, initAd *model.Adapter, resume ResumeMode, log *slog.Logger) error {
	m := prep.Model
	var err error
	if resume == Resume && log != nil {
		log.Warn("--resume: the run folder has no step to continue from: starting a fresh run (check --run and --out if you meant an existing run)",
			"run", run.Dir)
	}
	// A fresh run's flag is idle where it laid out none of the rows
	// (RowKwargs.MayChange); a deferred comparison learns that only once
	// the rows are read (CheckDeferredKwargs).
	o.KwargsIdle = !o.deferKwargs && slices.Contains(o.MayChange, kwargsKey)
	if err := run.DropStepsAfter(0); err != nil { // nor step folders, which no latest named
		return err
	}
	if err := run.RepairMetrics(0, nil); err != nil { // a fresh run starts with no rows
		return err
	}
	if err := repairEval(run, 0, log); err != nil { // an eval of step 0 (the base model) holds
		return err
	}
	if prep.Ad, err = freshAdapter(m, o, initAd); err != nil {
		return err
	}
	if err := prep.Ad.Place(m.Backend()); err != nil {
		return err
	}
	if prep.Opt, err = NewAdamW(prep.Ad, o.AdamWParams(), o.MaxGradNorm); err != nil {
		return err
	}
	return nil
}

// freshAdapter is the adapter a fresh run starts from: initAd (its
// --init-adapter, read before the lock), the --init-adapter read now, or
// a new LoRA of o's shape.
func freshAdapter(m *model.Model, o *Options, initAd *model.Adapter) (*model.Adapter, error) {
	if initAd != nil {
		return initAd, nil
	}
	if o.InitAdapter != "" {
		ad, err := model.ReadAdapter(o.InitAdapter, &m.Config)
		if err != nil {
			return nil, stageerr.Input(fmt.Errorf("--init-adapter: %w", err))
		}
		return ad, nil
	}
	ac := model.AdapterConfig{Rank: o.Rank, Alpha: o.Alpha, RSLoRA: o.RSLoRA}
	for _, t := range o.Targets {
		mod, err := model.ParseModule(t)
		if err != nil {
			return nil, err
		}
		ac.Targets = append(ac.Targets, mod)
	}
	return model.NewAdapter(&m.Config, ac, o.Seed)
}

// refuseChanges is the usage error of a resume whose config (now) differs
// from the run's saved one in an option a resume may not change: all but
// "steps", "epochs", mayChange, the backend keys and the checkpoint
// options (configDiff). It is nil when there is none.
func refuseChanges(run *checkpoint.Run, last int, saved, now []byte, mayChange []string) error {
	diff := configDiff(saved, now, slices.Concat(mayChange, backendKeys(), checkpointKeys(), []string{"steps_cross_epochs", kwargsIdleKey})...)
	if len(diff) == 0 {
		return nil
	}
	may := "--steps, --epochs, " + checkpointFlags
	if slices.Contains(mayChange, "inputs") {
		may = "the input files, --steps, --epochs, " + checkpointFlags
	}
	return stageerr.Usagef("resume %s: %s (saved in %s); a resumed run keeps its options: only %s may change",
		run.Dir, strings.Join(diff, "; "), filepath.Join(run.StepDir(last), checkpoint.ConfigName), may)
}

// keepIdleKwargs gives o the run's --chat-template-kwargs from its saved
// config where the command's laid out no row (o.MayChange names it:
// RowKwargs.MayChange), so that the steps it saves keep the run's value
// and a later call on rows that record none is compared with that, not
// with what a call that changed nothing happened to give; the run's flag
// stays idle (KwargsIdle) as it was. A command's flag that lays out rows
// is the run's from here: it was compared unless the run's was idle
// (runIdle), and the run's flag is idle no more.
func keepIdleKwargs(saved []byte, runIdle bool, o *Options) {
	if !slices.Contains(o.MayChange, kwargsKey) {
		o.KwargsIdle = false
		return
	}
	o.KwargsIdle = runIdle
	var c struct {
		Kwargs string `json:"chat_template_kwargs"`
	}
	if json.Unmarshal(saved, &c) == nil {
		o.TemplateKwargs = c.Kwargs
	}
}

// savedKwargsIdle is the KwargsIdle of a run's saved config: false where
// the key is absent (a config saved before it was kept) or the config is
// not a JSON object (configDiff's to report).
func savedKwargsIdle(saved []byte) bool {
	var c struct {
		Idle bool `json:"chat_template_kwargs_idle"`
	}
	return json.Unmarshal(saved, &c) == nil && c.Idle
}

// savedCrossEpochs is the StepsCrossEpochs of a run's saved config: its
// "steps_cross_epochs", true where the key is absent (a config saved before
// it existed). A config that is not a JSON object is configDiff's to report.
func savedCrossEpochs(saved []byte) bool {
	var c struct {
		Cross *bool `json:"steps_cross_epochs"`
	}
	if json.Unmarshal(saved, &c) != nil {
		return false
	}
	return c.Cross == nil || *c.Cross
}

// sameConfig reports whether two saved configs agree but for "steps" and
// "epochs" (configDiff).
func sameConfig(a, b []byte) bool { return len(configDiff(a, b)) == 0 }

// idleScheduleFlags says which schedule flags the chosen --lr-schedule
// does not read (Schedule.At): --warmup-steps under constant, --min-lr and
// --schedule-steps under anything but cosine. Given with the default
// constant schedule, a warm-up the user asked for silently did not happen
// (TRL's default schedule, linear, honours warmup_steps). They are warned
// about, not refused: a run saved with them must still resume, and a
// resume may not change them.
func (o *Options) idleScheduleFlags() []string {
	var out []string
	if o.Warmup > 0 && o.Schedule == "constant" {
		out = append(out, fmt.Sprintf("--warmup-steps %d does nothing with --lr-schedule constant (the default): the learning rate is --lr from the first update; --lr-schedule warmup or cosine warms up", o.Warmup))
	}
	if o.Schedule != "cosine" {
		if o.MinLR > 0 {
			out = append(out, fmt.Sprintf("--min-lr %v does nothing with --lr-schedule %s: only cosine decays to it", o.MinLR, o.Schedule))
		}
		if o.ScheduleSteps > 0 {
			out = append(out, fmt.Sprintf("--schedule-steps %d does nothing with --lr-schedule %s: it is the cosine schedule's horizon", o.ScheduleSteps, o.Schedule))
		}
	}
	return out
}

// noDecay is the warning for a cosine schedule s whose warm-up leaves no
// step (update) of its horizon below --lr: the last step of the horizon,
// s.Total−1, is at most the first after the warm-up, the top of the
// cosine (Schedule.At), so the run trains at the peak rate to its end.
// It is "" otherwise. Warned, not refused: a run saved with these must
// resume, and the horizon of one without --schedule-steps is the step
// each call trains to, which grows.
func (o *Options) noDecay(s Schedule) string {
	if s.Kind != "cosine" || s.Warmup == 0 || s.Warmup < s.Total-1 {
		return ""
	}
	horizon := fmt.Sprintf("the step this call trains to (with grpo --norm art, the updates counted to it), %d (--schedule-steps 0)", s.Total)
	if o.ScheduleSteps > 0 {
		horizon = fmt.Sprintf("--schedule-steps %d", o.ScheduleSteps)
	}
	return fmt.Sprintf("--lr-schedule cosine: --warmup-steps %d takes the whole horizon of %d steps (optimizer updates with grpo --norm art), %s: the learning rate never decays below --lr; give a horizon of at least %d steps, or fewer warm-up steps",
		s.Warmup, s.Total, horizon, s.Warmup+2)
}

// Loop returns a Loop over prep with the shared options filled in.
func (o *Options) Loop(prep *Prepared, config any, totalUpdates int, log *slog.Logger) *Loop {
	if o.BF16GateUp && !prep.Model.GateUpHeld(prep.Ad) {
		log.Warn("--bf16-gate-up changes nothing here: gate and up are held as bfloat16 only with --device cuda --compute bf16, bfloat16 weights, and in every layer a LoRA on down_proj of rank 16 or less and on gate_proj and up_proj both or neither")
	}
	for _, w := range o.idleScheduleFlags() {
		log.Warn(w)
	}
	sched := o.Sched(totalUpdates)
	if w := o.noDecay(sched); w != "" {
		log.Warn(w)
	}
	return &Loop{
		Model: prep.Model, Adapter: prep.Ad, Opt: prep.Opt, Sched: sched, Ckpt: prep.Ckpt,
		BaseName: o.Model, Config: config, Train: model.TrainOptions{Checkpoint: o.Checkpointing, GateUpBF16: o.BF16GateUp},
		SaveEvery: o.SaveEvery, KeepLast: o.KeepLast, BestMetric: o.BestMetric, BestMax: o.BestMode == "max",
		Log: log,
	}
}

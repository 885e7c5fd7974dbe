package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"

	"github.com/hone-rl/hone/cmd/internal/backend"
	"github.com/hone-rl/hone/cmd/internal/backendflag"
	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/train/trainer"
	"github.com/spf13/pflag"
)

// jobBackend holds the flags of a training job (sft, grpo) that choose
// its backend: --threads, --compute, --bf16-kernel, --device and the
// --cuda-* flags.
type jobBackend struct {
	threads             int
	compute, bf16Kernel string
	device              string
	cuda                backendflag.CUDAValues
}

// addFlags registers j's flags on fs.
func (j *jobBackend) addFlags(fs *pflag.FlagSet) {
	fs.IntVar(&j.threads, "threads", runtime.GOMAXPROCS(0), "CPU worker threads (0: all cores)")
	fs.StringVar(&j.compute, "compute", "f32", backendflag.ComputeUsage)
	fs.StringVar(&j.bf16Kernel, "bf16-kernel", "native", backendflag.BF16KernelUsage)
	backend.AddFlag(fs, &j.device)
	backendflag.AddCUDAFlags(fs, &j.cuda)
}

// check refuses a negative --threads: 0 means all cores (as hone-serve's
// --threads), and a negative count has no meaning; it was quietly taken
// as 0.
func (j *jobBackend) check() error {
	if j.threads < 0 {
		return cli.Usagef("--threads %d must not be negative (0: all cores)", j.threads)
	}
	return nil
}

// open opens the backend j's flags name for weights of dtype (the
// CUDA libraries' paths from the environment), logs its name, and
// returns it with the function that closes it at the job's end, logging
// what the backend had not freed (the CUDA backend names it).
func (j *jobBackend) open(dtype string, log *slog.Logger) (kernels.Backend, func(), error) {
	be, err := backend.Open(j.device, j.threads, j.compute, j.bf16Kernel, dtype, j.cuda, os.Getenv)
	if err != nil {
		return nil, nil, err
	}
	log.Info("backend", "name", be.Name())
	return be, func() {
		if err := be.Close(); err != nil {
			log.Warn("closing the backend", "err", err)
		}
	}, nil
}

// ignoredFlags are warnings for the flags given on fs that this call does
// not read: the shape of a fresh LoRA next to --init-adapter, whose
// adapter has its own, --publish-every and --publish-timeout with a local
// --out, and the flags of idleChoiceFlags. Warned, not refused, as --warmup-steps under a
// constant schedule is: a script may pass them on every call, and the run
// trains as it would without.
func ignoredFlags(fs *pflag.FlagSet, o *trainer.Options) []string {
	var out []string
	if o.InitAdapter != "" {
		var given []string
		for _, f := range []string{"rank", "alpha", "rslora", "targets"} {
			if fs.Changed(f) {
				given = append(given, "--"+f)
			}
		}
		if len(given) > 0 {
			out = append(out, fmt.Sprintf("%s does nothing with --init-adapter: they shape a fresh LoRA, and the adapter of --init-adapter %s (or the run's own, on --resume) has its own shape",
				strings.Join(given, ", "), o.InitAdapter))
		}
	}
	for _, f := range []string{"publish-every", "publish-timeout"} {
		if fs.Changed(f) && !fileset.IsURL(o.Out) {
			out = append(out, fmt.Sprintf("--%s does nothing with --out %s: only a run written to an object store (--out s3://…) is published", f, o.Out))
		}
	}
	return append(out, idleChoiceFlags(fs, o)...)
}

// idleChoiceFlags are warnings for the flags given on fs that refine a
// choice this call did not make: --best-mode without --best-metric, and
// grpo's --norm-constant without --norm constant, --tis-mode with
// --tis 0 and --kl-penalty-source with --kl-penalty-coef 0, and --epochs
// with --steps N, then idleRatioFlags. A user who set one believed the
// choice it refines was made.
// The grpo flags are read from fs by name, as sft has none of them.
func idleChoiceFlags(fs *pflag.FlagSet, o *trainer.Options) []string {
	var out []string
	// --steps overrides --epochs, as max_steps does num_train_epochs in
	// transformers' Trainer, which a port from TRL may set both of.
	if fs.Changed("epochs") && o.Steps > 0 {
		out = append(out, fmt.Sprintf("--epochs %d does nothing with --steps %d: --steps counts the call's steps (cycling the inputs as needed); --steps 0 trains --epochs passes", o.Epochs, o.Steps))
	}
	if fs.Changed("best-mode") && o.BestMetric == "" {
		out = append(out, "--best-mode does nothing without --best-metric: no step is picked as best")
	}
	if fs.Changed("norm-constant") {
		if norm := flagValue(fs, "norm"); norm != "constant" {
			out = append(out, fmt.Sprintf("--norm-constant does nothing with --norm %s: only --norm constant divides by it", norm))
		}
	}
	if fs.Changed("tis-mode") && flagValue(fs, "tis") == "0" {
		out = append(out, "--tis-mode does nothing with --tis 0 (the default): no truncated importance weight is applied; give --tis C, the cap")
	}
	// sample without a coefficient is refused (grpo.Config.Validate);
	// current_learner, ART's default, is the value a port writes out.
	if fs.Changed("kl-penalty-source") && flagValue(fs, "kl-penalty-coef") == "0" {
		out = append(out, "--kl-penalty-source does nothing with --kl-penalty-coef 0 (the default): no advantage is shifted; give --kl-penalty-coef c (with --norm art)")
	}
	return append(out, idleRatioFlags(fs)...)
}

// idleRatioFlags are warnings for grpo's ratio knobs that the rest of the
// call leaves nothing to act on: --kimi-k2-tau under --tis in its
// recomputed mode, whose ℓ^old is the step's own ℓ (δ = 0, so the shift
// −τ·δ is 0), and --ratio-per-history under --norm art, which packs every
// history as a sequence of its own already. An ART port sets both beside
// knobs that silence them there (precalculate_logprobs, the packed rows).
func idleRatioFlags(fs *pflag.FlagSet) []string {
	var out []string
	if fs.Changed("kimi-k2-tau") && flagValue(fs, "kimi-k2-tau") != "0" && flagValue(fs, "tis") != "0" && flagValue(fs, "tis-mode") != "sampler" {
		out = append(out, "--kimi-k2-tau does nothing with --tis in --tis-mode recomputed (the default): the ratio is taken against logprobs recomputed with the step's own weights, so logπ − logπ_old is 0 and so is the shift; --tis-mode sampler takes it against the sampler's")
	}
	if fs.Changed("ratio-per-history") && flagValue(fs, "ratio-per-history") == "true" && flagValue(fs, "norm") == "art" {
		out = append(out, "--ratio-per-history does nothing with --norm art: every history is packed as a sequence of its own there, so the sequence ratio is already per history")
	}
	return out
}

// flagValue is the value of fs's flag name as text ("" when fs has none).
func flagValue(fs *pflag.FlagSet, name string) string {
	if f := fs.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// runJob runs a training job (sft, grpo) whose shared options are o: the
// job's options checked (check, the job's Validate: its error is a usage
// error) with the remote output's flags, then the logger, the backend
// jb's flags name (for o.DType weights), both given to o, and the remote
// output started; it returns job's error after the output is published,
// then closes the backend. The checks come first so that a bad flag is
// named before a CUDA device is initialised, or fails to be on a machine
// without one.
func runJob(ctx context.Context, logger func() (*slog.Logger, error), fs *pflag.FlagSet, jb *jobBackend, remote *remoteOut, o *trainer.Options, check, job func() error) error {
	if err := check(); err != nil {
		return cli.Usage(err)
	}
	if err := remote.check(o); err != nil {
		return err
	}
	if err := jb.check(); err != nil {
		return err
	}
	log, err := logger()
	if err != nil {
		return err
	}
	for _, w := range ignoredFlags(fs, o) {
		log.Warn(w)
	}
	// Saved with the run's config, so that a resume elsewhere is noted
	// (trainer.Options.Device); the thread count as the backend takes it
	// (0: GOMAXPROCS), read before open raises GOMAXPROCS by a spare.
	o.Device, o.Compute, o.Threads = jb.device, jb.compute, jb.threads
	if o.Threads <= 0 {
		o.Threads = runtime.GOMAXPROCS(0)
	}
	be, closeBackend, err := jb.open(o.DType, log)
	if err != nil {
		return err
	}
	defer closeBackend()
	o.Backend, o.Log = be, log
	finish, err := remote.start(ctx, o, log)
	if err != nil {
		return err
	}
	return finish(job())
}

package grpojob

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/train/checkpoint"
	"github.com/hone-rl/hone/train/grpo"
	"github.com/hone-rl/hone/train/model"
	"github.com/hone-rl/hone/train/tinymodel"
	"github.com/hone-rl/hone/train/trainer"
	"github.com/spf13/pflag"
)

func newFlagSet() *pflag.FlagSet { return pflag.NewFlagSet("test", pflag.ContinueOnError) }

// readMetrics reads a run's metrics rows and checks that each metric is
// one metricNames lists, the names --best-metric is checked against.
func readMetrics(t *testing.T, dir string) []map[string]float64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, runfolder.MetricsName))
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]float64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var r map[string]float64
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("metrics line %q: %v", sc.Text(), err)
		}
		for k := range r {
			if !slices.Contains(metricNames(), k) {
				t.Errorf("metrics row has %q, which metricNames does not list (hone-train --best-metric %s would be refused)", k, k)
			}
		}
		rows = append(rows, r)
	}
	return rows
}

func TestRunWritesCheckpointsAndMetrics(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	in := filepath.Join(dir, "a.parquet")
	writeGroups(t, md, in, 4, 4, varied)
	o := baseOptions(md, filepath.Join(dir, "adapters"), "r1", in)
	o.Epochs = 2
	o.KeepLast, o.BestMetric = 2, "reward_mean"
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	run := &checkpoint.Run{Dir: filepath.Join(dir, "adapters", "r1")}
	last, ok, err := run.Latest()
	if err != nil || !ok || last != 4 {
		t.Fatalf("latest = %d %v %v, want step 4 (2 epochs × 4 groups / 2 per step)", last, ok, err)
	}
	steps, _ := run.Steps()
	if best, ok, _ := run.Best(); !ok || len(steps) > 3 || !contains(steps, best) || !contains(steps, 4) || !contains(steps, 3) {
		t.Errorf("kept steps %v (best %d): want the last 2 plus the best", steps, best)
	}
	rows := readMetrics(t, run.Dir)
	if len(rows) != 4 {
		t.Fatalf("%d metrics rows, want 4", len(rows))
	}
	for _, k := range []string{"loss", "policy_loss", "kl", "entropy", "clip_frac", "grad_norm", "lr", "reward_mean", "reward_std", "groups_trainable", "tokens", "trainable_tokens", "tokens_per_s", "seconds"} {
		if _, ok := rows[0][k]; !ok {
			t.Errorf("metrics row lacks %q: %v", k, rows[0])
		}
	}
	if rows[0]["grad_norm"] == 0 || rows[0]["groups_trainable"] != 2 {
		t.Errorf("first step trained nothing: %v", rows[0])
	}
	// The saved adapter loads as PEFT and differs from a fresh one.
	m, err := model.Load(md, backend(t))
	if err != nil {
		t.Fatal(err)
	}
	ad, err := model.ReadAdapter(run.StepDir(4), &m.Config)
	if err != nil {
		t.Fatal(err)
	}
	nonzero := false
	ad.Params(func(name string, p, _ []float32) {
		if strings.HasSuffix(name, "lora_B.weight") {
			for _, x := range p {
				nonzero = nonzero || x != 0
			}
		}
	})
	if !nonzero {
		t.Error("lora_B is still zero after 4 steps")
	}
	// Running again without --resume refuses; with it there is nothing to do.
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Errorf("second run without --resume: %v", err)
	}
	o.Resume = true
	log.Reset()
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil || !strings.Contains(log.String(), "nothing to do") {
		t.Errorf("resume of a finished run: %v, log %q", err, log.String())
	}
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func TestNothingTrainableSaysWhy(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	in := filepath.Join(dir, "eq.parquet")
	writeGroups(t, md, in, 2, 3, func(g, i int) float64 {
		if g == 1 {
			return math.NaN()
		}
		return 1
	})
	o := baseOptions(md, dir, "eq", in)
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatal(err)
	}
	msg := log.String()
	if !strings.Contains(msg, "nothing to train") || !strings.Contains(msg, "1 with equal rewards") || !strings.Contains(msg, "1 with only errored") || !strings.Contains(msg, "3 errors") {
		t.Errorf("log does not say why: %q", msg)
	}
	rows := readMetrics(t, filepath.Join(dir, "eq"))
	if len(rows) != 1 || rows[0]["trainable_tokens"] != 0 || rows[0]["dropped_zero_adv"] != 3 || rows[0]["errors"] != 3 {
		t.Errorf("metrics %v", rows)
	}
}

// TestGradientCheckThroughModel compares the gradient trainer.Accumulate
// puts into the LoRA tensors with central differences of the step loss
// along random directions of all LoRA parameters, for differentiable
// variants of the loss (ppo with a wide clip range, token and sequence
// ratios, KL on; art with on-policy ratios, where its weight is constant).
func TestGradientCheckThroughModel(t *testing.T) {
	m, exs := stepExamples(t, tinyModel(t, t.TempDir()), backend(t), 2, 3)
	cases := map[string]grpo.Config{
		"ppo token kl":  {Loss: "ppo", Epsilon: 0.99, EpsilonHigh: 50, Level: "token", Norm: "sequence", Beta: 0.5},
		"ppo sequence":  {Loss: "ppo", Epsilon: 0.99, EpsilonHigh: 50, Level: "sequence", Norm: "tokens"},
		"art on-policy": {Loss: "art", Epsilon: 1, EpsilonHigh: 4, Level: "token", Norm: "constant", NormConstant: 16, Beta: 0.2},
		// ART's ratio levels and its per-history sequence ratio.
		"ppo average":               {Loss: "ppo", Epsilon: 0.99, EpsilonHigh: 50, Level: "average", Norm: "sequence"},
		"ppo geometric per history": {Loss: "ppo", Epsilon: 0.99, EpsilonHigh: 50, Level: "geometric_average", RatioPerHistory: true, Norm: "tokens"},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			ad, err := model.NewAdapter(&m.Config, model.AdapterConfig{Rank: 2, Alpha: 4, Targets: model.AllModules()}, 5)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(9, 9))
			ad.Params(func(_ string, p, _ []float32) {
				for i := range p {
					p[i] += float32(0.05 * rng.NormFloat64())
				}
			})
			tot := grpo.Totals{Items: len(exs)}
			for i := range exs {
				tot.Tokens += exs[i].Trainable()
			}
			mbs, err := trainer.Pack(exs, 40) // several micro-batches
			if err != nil {
				t.Fatal(err)
			}
			if len(mbs) < 2 {
				t.Fatalf("want gradient accumulation over several micro-batches, got %d", len(mbs))
			}
			if cfg.Loss == "art" {
				for _, mb := range mbs {
					for i := range mb.Sampler {
						mb.Sampler[i] = float32(math.NaN())
					}
				}
			}
			job := &trainer.Job{MicroBatches: mbs, Loss: lossFunc(cfg, tot, samplerTokens(exs), nil, 1), NeedRef: cfg.Beta > 0}
			ctx := context.Background()
			if _, err := trainer.Accumulate(ctx, m, ad, job, model.TrainOptions{}); err != nil {
				t.Fatal(err)
			}
			var params, grads [][]float32
			ad.Params(func(_ string, p, g []float32) {
				params = append(params, p)
				grads = append(grads, append([]float32(nil), g...))
			})
			loss := func() float64 {
				s, err := trainer.Accumulate(ctx, m, ad, job, model.TrainOptions{})
				if err != nil {
					t.Fatal(err)
				}
				return s["loss"]
			}
			for dirn := range 3 {
				d := make([][]float32, len(params))
				analytic := 0.0
				for k, p := range params {
					d[k] = make([]float32, len(p))
					for i := range p {
						d[k][i] = float32(rng.NormFloat64())
						analytic += float64(d[k][i]) * float64(grads[k][i])
					}
				}
				const h = 1e-3
				shift := func(s float32) {
					for k, p := range params {
						for i := range p {
							p[i] += s * d[k][i]
						}
					}
				}
				orig := make([][]float32, len(params))
				for k, p := range params {
					orig[k] = append([]float32(nil), p...)
				}
				shift(h)
				up := loss()
				for k := range params {
					copy(params[k], orig[k])
				}
				shift(-h)
				down := loss()
				for k := range params {
					copy(params[k], orig[k])
				}
				fd := (up - down) / (2 * h)
				t.Logf("direction %d: analytic %.6g, finite difference %.6g", dirn, analytic, fd)
				if math.Abs(fd-analytic) > 2e-2*math.Abs(analytic)+1e-5 {
					t.Errorf("direction %d: analytic %.6g, finite difference %.6g", dirn, analytic, fd)
				}
			}
		})
	}
}

func TestWatchTrainsOnlyNewFilesAndLocks(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	watch := watchFolder(t, dir, md)
	o := baseOptions(md, dir, "cron")
	o.WatchDir = watch
	runDir := filepath.Join(dir, "cron")
	step := func() int {
		n, _, err := (&checkpoint.Run{Dir: runDir}).Latest()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if step() != 1 {
		t.Fatalf("after the first cron run: step %d, want 1", step())
	}
	log.Reset()
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatal(err)
	}
	if step() != 1 || !strings.Contains(log.String(), "nothing new") {
		t.Fatalf("second run trained again: step %d, log %q", step(), log.String())
	}
	writeGroups(t, md, filepath.Join(watch, "round2.parquet"), 2, 3, varied)
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatal(err)
	}
	man, err := (&checkpoint.Run{Dir: runDir}).ReadManifest()
	if err != nil {
		t.Fatal(err)
	}
	if step() != 2 || len(man.Consumed) != 2 || man.Pending != nil {
		t.Fatalf("after round2: step %d, manifest %+v", step(), man)
	}
	// A held lock keeps a second run out.
	unlock, err := (&checkpoint.Run{Dir: runDir}).Lock()
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); !errors.Is(err, checkpoint.ErrLocked) {
		t.Errorf("run under a held lock: %v, want ErrLocked", err)
	}
}

// TestGRPOPrefersRewardedAnswers trains on groups where the answer "yes"
// scores 1 and "no" scores 0, and checks the direction of learning: the
// log-probability of "yes" relative to "no" rises, for each loss variant.
func TestGRPOPrefersRewardedAnswers(t *testing.T) {
	dir := t.TempDir()
	md := filepath.Join(dir, "model")
	if err := tinymodel.Write(context.Background(), md, tinymodel.Options{Hidden: 32, Layers: 2, Heads: 4, KVHeads: 2, Seed: 4, InitStd: 0.2}, ref.New()); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "yn.parquet")
	answer := func(g, i int) string { return []string{"yes", "no"}[(g+i)%2] }
	writeGroupsWith(t, md, in, 4, 4, answer, func(g, i int) float64 { return float64(1 - (g+i)%2) })
	be := backend(t)
	m, gs := loadFixture(t, md, be, in)
	// margin = mean log π(yes answer) − mean log π(no answer) over group 0.
	margin := func(ad *model.Adapter) float64 {
		var s [2]float64
		for i, ex := range gs[0].Ex {
			mbs, err := trainer.Pack([]trainer.Example{ex}, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			p, err := m.Forward(context.Background(), &mbs[0].Batch, ad, model.TrainOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, pos := range mbs[0].Pos {
				s[i%2] += float64(p.Logprob[pos]) / 2
			}
		}
		return s[0] - s[1]
	}
	for name, set := range map[string]func(*Options){
		"art":        func(o *Options) {},
		"ppo tokens": func(o *Options) { o.Loss.Loss = "ppo"; o.Loss.Norm = "tokens" },
		"gspo dr-grpo": func(o *Options) {
			o.Loss.Loss = "ppo"
			o.Loss.Level = "sequence"
			o.Loss.Norm = "constant"
			o.ScaleRewards = "none"
		},
		"art kl tis": func(o *Options) { o.Loss.Beta = 0.05; o.Loss.TIS = 2 },
		// ART's step: several rows, an update each; ART's ratio knobs.
		"norm art rows": func(o *Options) {
			o.Loss.Norm, o.PackedSeqLen, o.AdvantageBalance = "art", 48, 0.2
			o.Loss.Level, o.Loss.MaxISWeight, o.Loss.TIS, o.Loss.TISMode = "geometric_average", 3, 2, "sampler"
		},
	} {
		t.Run(name, func(t *testing.T) {
			o := baseOptions(md, dir, "yn-"+strings.ReplaceAll(name, " ", "-"), in)
			o.GroupsPerStep, o.Steps, o.LR = 4, 5, 2e-2
			set(&o)
			var log bytes.Buffer
			if err := runWith(context.Background(), be, o, textLog(&log)); err != nil {
				t.Fatalf("%v\n%s", err, log.String())
			}
			run := &checkpoint.Run{Dir: filepath.Join(dir, o.Name)}
			if o.Loss.Norm == "art" {
				if u := readMetrics(t, run.Dir)[0]["updates"]; u < 2 {
					t.Errorf("first step took %v updates; the case wants several rows", u)
				}
			}
			ad, err := model.ReadAdapter(run.StepDir(5), &m.Config)
			if err != nil {
				t.Fatal(err)
			}
			before, after := margin(nil), margin(ad)
			t.Logf("log π(yes) − log π(no): %.3f → %.3f", before, after)
			if !(after > before+0.5) {
				t.Errorf("margin %.3f → %.3f: the rewarded answer did not gain", before, after)
			}
		})
	}
}

func TestResumeChecksOptions(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	in := filepath.Join(dir, "a.parquet")
	writeGroups(t, md, in, 2, 3, varied)
	o := baseOptions(md, dir, "r", in)
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatal(err)
	}
	o.Resume = true
	o.Loss.Beta = 0.5
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err == nil || !strings.Contains(err.Error(), `option "loss.beta" differs: run has 0, command gives 0.5`) {
		t.Errorf("resume with another beta: %v", err)
	}
	o.Loss.Beta = 0
	o.Steps = 3 // extending a run is allowed
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := (&checkpoint.Run{Dir: filepath.Join(dir, "r")}).Latest(); n != 3 {
		t.Errorf("extended run at step %d, want 3", n)
	}
}

// TestGradientCheckpointingSameResult: recomputing block activations in
// backward gives the same adapter as keeping them.
func TestGradientCheckpointingSameResult(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	in := filepath.Join(dir, "a.parquet")
	writeGroups(t, md, in, 2, 3, varied)
	var files [2][]byte
	for i, ck := range []bool{false, true} {
		o := baseOptions(md, dir, fmt.Sprintf("ck%d", i), in)
		o.Steps, o.Checkpointing = 2, ck
		var log bytes.Buffer
		if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, o.Name, runfolder.StepName(2), "adapter_model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		files[i] = b
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Error("adapters differ with and without gradient checkpointing")
	}
}

// TestWatchCosineSpansScheduleSteps trains one step per cron session with a
// cosine schedule over --schedule-steps 4: each session's LR must follow
// the run's cosine, not a cosine that ends at the session's own last step.
func TestWatchCosineSpansScheduleSteps(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	watch := filepath.Join(dir, "incoming")
	if err := os.MkdirAll(watch, 0o755); err != nil {
		t.Fatal(err)
	}
	o := baseOptions(md, dir, "cos")
	o.WatchDir, o.Steps = watch, 0
	o.LR, o.Schedule, o.ScheduleSteps = 1e-3, "cosine", 4
	for r := 1; r <= 3; r++ {
		writeGroups(t, md, filepath.Join(watch, fmt.Sprintf("round%d.parquet", r)), 2, 3, varied)
		var log bytes.Buffer
		if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
			t.Fatalf("session %d: %v\n%s", r, err, log.String())
		}
	}
	f, err := os.ReadFile(filepath.Join(dir, "cos", runfolder.MetricsName))
	if err != nil {
		t.Fatal(err)
	}
	var got []float64
	for _, line := range strings.Split(strings.TrimSpace(string(f)), "\n") {
		var row struct {
			LR float64 `json:"lr"`
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatal(err)
		}
		got = append(got, row.LR)
	}
	if len(got) != 3 {
		t.Fatalf("%d metrics rows, want 3: %v", len(got), got)
	}
	for k, lr := range got {
		want := 1e-3 * (1 + math.Cos(math.Pi*float64(k)/4)) / 2
		if math.Abs(lr-want) > 1e-12 {
			t.Errorf("update %d: lr %g, want %g (cosine over 4 updates)", k, lr, want)
		}
	}
}

// TestDTypeBFloat16: --dtype bfloat16 trains on bfloat16 base weights.
// On a model stored as bf16 both dtypes hold the same values, so the first
// step's loss, entropy and gradient norm agree up to summation order; on a
// float32 model the rounding of the weights shows in the loss.
func TestDTypeBFloat16(t *testing.T) {
	for _, disk := range []string{"BF16", "F32"} {
		t.Run(disk, func(t *testing.T) {
			dir := t.TempDir()
			md := filepath.Join(dir, "model")
			if err := tinymodel.Write(context.Background(), md, tinymodel.Options{Family: "qwen3", Hidden: 32, Layers: 2, Heads: 4, KVHeads: 2, Seed: 3, DType: disk, InitStd: 0.1}, ref.New()); err != nil {
				t.Fatal(err)
			}
			in := filepath.Join(dir, "a.parquet")
			writeGroups(t, md, in, 2, 3, varied)
			var first [2]map[string]float64
			for i, dt := range []string{"float32", "bf16"} {
				o := baseOptions(md, filepath.Join(dir, "adapters"), dt, in)
				o.Steps, o.DType = 1, dt
				var log bytes.Buffer
				if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
					t.Fatalf("--dtype %s: %v\n%s", dt, err, log.String())
				}
				run := &checkpoint.Run{Dir: filepath.Join(dir, "adapters", dt)}
				first[i] = readMetrics(t, run.Dir)[0]
				cfg, err := run.ReadConfig(1)
				if want := map[string]string{"float32": `"dtype": "float32"`, "bf16": `"dtype": "bfloat16"`}[dt]; err != nil || !strings.Contains(string(cfg), want) {
					t.Errorf("--dtype %s: saved config lacks %s: %s %v", dt, want, cfg, err)
				}
			}
			for _, k := range []string{"loss", "entropy", "grad_norm"} {
				a, b := first[0][k], first[1][k]
				rel := math.Abs(a-b) / math.Max(math.Abs(a), 1e-12)
				switch {
				case disk == "BF16" && rel > 1e-4:
					t.Errorf("%s: float32 %g, bfloat16 %g (rel %.2g) on bf16 weights, want within 1e-4", k, a, b, rel)
				case disk == "F32" && k == "loss" && a == b:
					t.Errorf("loss %g with and without rounding the float32 weights to bf16", a)
				}
			}
		})
	}
}

// TestSamplerGapMetrics: over a step of several micro-batches,
// sampler_logp_diff_mean and _max are the mean and max of
// |ℓ_θ − ℓ_sampler| over the tokens whose sampling logprob is known.
func TestSamplerGapMetrics(t *testing.T) {
	m, exs := stepExamples(t, tinyModel(t, t.TempDir()), backend(t), 2, 3)
	// Forget the sampling logprob of every third trainable token.
	k := 0
	for _, e := range exs {
		for _, sq := range e.Seqs {
			for j := 1; j < len(sq.Trainable); j++ {
				if sq.Trainable[j] {
					if k%3 == 0 {
						sq.Logprobs[j] = float32(math.NaN())
					}
					k++
				}
			}
		}
	}
	known := samplerTokens(exs)
	if known == 0 || known == k {
		t.Fatalf("%d of %d tokens known; the test needs some of each", known, k)
	}
	tot := grpo.Totals{Items: len(exs)}
	for i := range exs {
		tot.Tokens += exs[i].Trainable()
	}
	mbs, err := trainer.Pack(exs, 40)
	if err != nil {
		t.Fatal(err)
	}
	if len(mbs) < 2 {
		t.Fatalf("want several micro-batches, got %d", len(mbs))
	}
	ad, err := model.NewAdapter(&m.Config, model.AdapterConfig{Rank: 2, Alpha: 4, Targets: model.AllModules()}, 5)
	if err != nil {
		t.Fatal(err)
	}
	// The independent count: every token's gap, seen through the loss.
	var sum, worst float64
	n := 0
	inner := lossFunc(grpo.DefaultConfig(), tot, known, nil, 1)
	wrap := func(mb *trainer.MicroBatch, out trainer.Outputs) (map[string]float64, []float64, error) {
		for i, lp := range mb.Sampler {
			if !math.IsNaN(float64(lp)) {
				d := math.Abs(float64(out.Logprob[i]) - float64(lp))
				sum, worst, n = sum+d, max(worst, d), n+1
			}
		}
		return inner(mb, out)
	}
	s, err := trainer.Accumulate(context.Background(), m, ad, &trainer.Job{MicroBatches: mbs, Loss: wrap}, model.TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n != known || worst == 0 {
		t.Fatalf("saw %d known tokens (want %d), max gap %v", n, known, worst)
	}
	if got, want := s["sampler_logp_diff_mean"], sum/float64(n); math.Abs(got-want) > 1e-9*want {
		t.Errorf("sampler_logp_diff_mean %v, want %v", got, want)
	}
	if got := s["sampler_logp_diff_max"]; got != worst {
		t.Errorf("sampler_logp_diff_max %v, want %v (the max over micro-batches, not their sum)", got, worst)
	}
}

// textLog logs as hone-train does (slog text lines) into w.
func textLog(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// TestWatchTrainsEachContentOnce: --watch-dir knows files by sha256, so a
// copy of a file (round-3.parquet and round-3-copy.parquet) is the same
// data: two copies arriving together are trained once, as they are when
// the copy arrives after the original was consumed.
func TestWatchTrainsEachContentOnce(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	watch := watchFolder(t, dir, md)
	b, err := os.ReadFile(filepath.Join(watch, "round1.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(watch, "round1-copy.parquet"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	o := baseOptions(md, dir, "cron")
	o.WatchDir, o.GroupsPerStep = watch, 0
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	rows := readMetrics(t, filepath.Join(dir, "cron"))
	if len(rows) != 1 || rows[0]["groups"] != 2 {
		t.Errorf("metrics %v: want one step over the 2 groups of round1.parquet", rows)
	}
	log.Reset()
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil || !strings.Contains(log.String(), "nothing new") {
		t.Errorf("second run: %v, want nothing new\n%s", err, log.String())
	}
}

// watchFolder makes dir/incoming, a folder to watch holding round1.parquet
// (two groups of three of the model in md), and returns it.
func watchFolder(t *testing.T, dir, md string) string {
	t.Helper()
	watch := filepath.Join(dir, "incoming")
	if err := os.MkdirAll(watch, 0o755); err != nil {
		t.Fatal(err)
	}
	writeGroups(t, md, filepath.Join(watch, "round1.parquet"), 2, 3, varied)
	return watch
}

package grpojob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/train/checkpoint"
	"github.com/hone-rl/hone/train/grpo"
	"github.com/hone-rl/hone/train/trainer"
)

const artRerun = "rerun: /usr/bin/python3 train/grpojob/testdata/artstep/make_golden.py (needs torch)"

type artGolden struct {
	Trajectories []struct {
		Group  int          `json:"group"`
		Reward float64      `json:"reward"`
		Hists  []string     `json:"hists"`
		IDs    [][]int32    `json:"ids"`
		Old    [][]*float64 `json:"old"`
		New    [][]*float64 `json:"new"`
		Ref    [][]*float64 `json:"ref"` // base model's (adapter off)
	} `json:"trajectories"`
	Cases []struct {
		Name   string `json:"name"`
		Config struct {
			PackedSeqLen     int     `json:"packed_sequence_length"`
			AdvantageBalance float64 `json:"advantage_balance"`
			LRPower          float64 `json:"lr_trajectories_power"`
			PPO              bool    `json:"ppo"`
			Epsilon          float64 `json:"epsilon"`
			EpsilonHigh      float64 `json:"epsilon_high"`
			Level            string  `json:"level"`
			MaxISWeight      float64 `json:"max_is_weight"`
			MaskRatio        bool    `json:"mask_prob_ratio"`
			KimiTau          float64 `json:"kimi_k2_tau"`
			TIS              float64 `json:"tis"`
			KLPenaltyCoef    float64 `json:"kl_penalty_coef"`
			KLPenaltySource  string  `json:"kl_penalty_source"`
		} `json:"config"`
		SeqLen int `json:"seq_len"`
		Rows   []struct {
			Results [][2]int           `json:"results"` // (trajectory, history)
			Loss    float64            `json:"loss"`
			Grad    map[string]float64 `json:"grad"` // by target token id
			LRScale float64            `json:"lr_scale"`
			KLRef   float64            `json:"kl_ref"` // ART's kl_policy_ref of the row
		} `json:"rows"`
	} `json:"cases"`
	StdCases []struct {
		Y     []float64 `json:"y"`
		Scale float64   `json:"scale"`
	} `json:"std_cases"`
	StepRewardStd float64 `json:"step_reward_std"`
}

func readArtGolden(t *testing.T) artGolden {
	t.Helper()
	raw, err := os.ReadFile("testdata/artstep/golden.json")
	if err != nil {
		t.Fatalf("%v (%s)", err, artRerun)
	}
	var prov struct {
		SHA256 map[string]string `json:"sha256"`
	}
	pb, err := os.ReadFile("testdata/artstep/provenance.json")
	if err != nil || json.Unmarshal(pb, &prov) != nil {
		t.Fatalf("provenance.json: %v (%s)", err, artRerun)
	}
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != prov.SHA256["golden.json"] {
		t.Fatalf("golden.json does not match its checksum in provenance.json (%s)", artRerun)
	}
	var g artGolden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatalf("%v (%s)", err, artRerun)
	}
	if len(g.Cases) < 6 || len(g.StdCases) < 5 {
		t.Fatalf("golden has %d step cases and %d std cases (%s)", len(g.Cases), len(g.StdCases), artRerun)
	}
	return g
}

// artGroups lays the golden's trajectories out as loadGroups would: one
// sequence per history, its assistant tokens ('a') trainable with their
// sampling logprobs. It also returns every token's logprob under the
// "current" policy and under the base model, by token id (ids are unique
// in the golden).
func artGroups(t *testing.T, g artGolden) ([]group, map[int32]float32, map[int32]float32) {
	var gs []group
	cur, ref := map[int32]float32{}, map[int32]float32{}
	for i, tr := range g.Trajectories {
		for len(gs) <= tr.Group {
			gs = append(gs, group{ID: fmt.Sprint(len(gs))})
		}
		var ex trainer.Example
		for h, kinds := range tr.Hists {
			s := layout.Sequence{IDs: tr.IDs[h]}
			for j := range kinds {
				lp := float32(math.NaN())
				if o := tr.Old[h][j]; o != nil {
					lp = float32(*o)
					cur[tr.IDs[h][j]] = float32(*tr.New[h][j])
					ref[tr.IDs[h][j]] = float32(*tr.Ref[h][j])
				}
				s.Trainable = append(s.Trainable, kinds[j] == 'a')
				s.Logprobs = append(s.Logprobs, lp)
			}
			if len(s.IDs) != len(kinds) {
				t.Fatalf("trajectory %d history %d: %d ids for %d tokens (%s)", i, h, len(s.IDs), len(kinds), artRerun)
			}
			ex.Seqs = append(ex.Seqs, s)
		}
		gr := &gs[tr.Group]
		gr.Rewards = append(gr.Rewards, tr.Reward)
		gr.Ex = append(gr.Ex, ex)
		gr.Missing = append(gr.Missing, "")
	}
	return gs, cur, ref
}

// TestARTStepMatchesPyTorch: with --norm art, a step over the golden's
// groups packs the same histories into the same rows as a PyTorch
// restatement of ART's pack.py, takes one update per row with ART's
// learning-rate multiplier, and each row's loss and dLoss/dℓ (per target
// token) match ART's loss_fn on that row, with --kl-penalty-coef's
// advantage shift by the row's mean KL (logged as kl_policy_ref, the mean
// over rows).
func TestARTStepMatchesPyTorch(t *testing.T) {
	g := readArtGolden(t)
	gs, cur, ref := artGroups(t, g)
	idx := make([]int, len(gs))
	for i := range idx {
		idx[i] = i
	}
	// Trajectory number of each token id: the golden's ids are
	// 10000·(trajectory+1) + 100·history + position + 1.
	traj := func(id int32) [2]int { return [2]int{int(id)/10000 - 1, int(id) % 10000 / 100} }
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			cc := c.Config
			o := Options{ScaleRewards: "group", AdvantageBalance: cc.AdvantageBalance,
				LRTrajectoriesPower: cc.LRPower, PackedSeqLen: cc.PackedSeqLen}
			o.Loss = grpo.Config{Loss: "art", Epsilon: cc.Epsilon, EpsilonHigh: cc.EpsilonHigh, Level: cc.Level,
				Norm: "art", MaxISWeight: cc.MaxISWeight, MaskRatio: cc.MaskRatio, KimiTau: cc.KimiTau,
				TIS: cc.TIS, TISMode: "sampler", KLPenaltyCoef: cc.KLPenaltyCoef, KLPenaltySource: cc.KLPenaltySource}
			if cc.PPO {
				o.Loss.Loss = "ppo"
			}
			if err := o.Loss.Validate(); err != nil {
				t.Fatal(err)
			}
			job, err := stepJob(gs, idx, o, 1)
			if err != nil {
				t.Fatal(err)
			}
			if job.Skip != "" || !job.PerMicroBatch {
				t.Fatalf("skip %q, per micro-batch %v", job.Skip, job.PerMicroBatch)
			}
			if job.NeedRef != (cc.KLPenaltyCoef > 0) {
				t.Fatalf("the step runs the base model: %v, with kl-penalty-coef %v", job.NeedRef, cc.KLPenaltyCoef)
			}
			if len(job.MicroBatches) != len(c.Rows) || job.Metrics["rows"] != float64(len(c.Rows)) {
				t.Fatalf("%d rows (metric %v), ART %d: one optimizer step per row (%s)", len(job.MicroBatches), job.Metrics["rows"], len(c.Rows), artRerun)
			}
			mean := 0.0
			for r, mb := range job.MicroBatches {
				want := c.Rows[r]
				// The row holds the same histories, in order.
				var got [][2]int
				for _, p := range mb.Batch.SeqOff[:len(mb.Batch.SeqOff)-1] {
					got = append(got, traj(mb.Batch.IDs[p]))
				}
				if fmt.Sprint(got) != fmt.Sprint(want.Results) {
					t.Fatalf("row %d holds %v, ART %v", r, got, want.Results)
				}
				if len(mb.Batch.IDs) > c.SeqLen {
					t.Errorf("row %d has %d tokens, row length %d", r, len(mb.Batch.IDs), c.SeqLen)
				}
				if !near(job.LRScale[r], want.LRScale, 1e-12) {
					t.Errorf("row %d: lr scale %v, ART %v", r, job.LRScale[r], want.LRScale)
				}
				out := trainer.Outputs{}
				for _, p := range mb.Pos {
					out.Logprob = append(out.Logprob, cur[mb.Batch.Targets[p]])
					if job.NeedRef {
						out.Ref = append(out.Ref, ref[mb.Batch.Targets[p]])
					}
				}
				sums, grad, err := job.Loss(mb, out)
				if err != nil {
					t.Fatal(err)
				}
				// Reported as the mean over rows; the row's own loss is R times it.
				rowLoss := sums["loss"] * float64(len(job.MicroBatches))
				if !near(rowLoss, want.Loss, 1e-9) {
					t.Errorf("row %d: loss %v, ART %v (%s)", r, rowLoss, want.Loss, artRerun)
				}
				mean += sums["loss"]
				if klRef := sums["kl_policy_ref"] * float64(len(job.MicroBatches)); !near(klRef, want.KLRef, 1e-9) {
					t.Errorf("row %d: kl_policy_ref %v, ART %v (%s)", r, klRef, want.KLRef, artRerun)
				}
				if len(grad) != len(want.Grad) {
					t.Fatalf("row %d: %d gradients, ART %d", r, len(grad), len(want.Grad))
				}
				for k, p := range mb.Pos {
					id := fmt.Sprint(mb.Batch.Targets[p])
					w, ok := want.Grad[id]
					if !ok || !near(grad[k], w, 1e-9) {
						t.Errorf("row %d token %s: dL/dℓ %v, ART %v (%s)", r, id, grad[k], w, artRerun)
					}
				}
			}
			t.Logf("%d rows of ≤ %d tokens, mean row loss %.4g", len(job.MicroBatches), c.SeqLen, mean)
		})
	}
	if got := groupRewardStd(gs, idx); !near(got, g.StepRewardStd, 1e-12) {
		t.Errorf("mean within-group reward std %v, numpy %v", got, g.StepRewardStd)
	}
	for _, c := range g.StdCases {
		if got := rewardStdLRScale(c.Y); !near(got, c.Scale, 1e-9) {
			t.Errorf("reward-std lr scale of %v: %v, numpy.polyfit %v", c.Y, got, c.Scale)
		}
	}
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

// TestARTNormRun trains two steps with --norm art on a real Parquet file:
// each step takes one optimizer update per packed row (counted in the
// metrics row, and in the optimizer's update count saved with the step),
// and a run stopped after step 1 and resumed ends with the same adapter
// as one that ran straight through.
func TestARTNormRun(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	in := filepath.Join(dir, "a.parquet")
	writeGroups(t, md, in, 4, 4, varied)
	opts := func(run string, steps int) Options {
		o := baseOptions(md, filepath.Join(dir, "adapters"), run, in)
		o.Loss.Norm, o.PackedSeqLen, o.Steps = "art", 40, steps
		o.AdvantageBalance, o.LRTrajectoriesPower = 0.2, 0.5
		return o
	}
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), opts("straight", 2), textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	run := &checkpoint.Run{Dir: filepath.Join(dir, "adapters", "straight")}
	rows := readMetrics(t, run.Dir)
	if len(rows) != 2 {
		t.Fatalf("%d metrics rows, want 2", len(rows))
	}
	updates := 0
	for i, r := range rows {
		if r["updates"] < 2 || r["updates"] != r["rows"] {
			t.Errorf("step %d: %v updates for %v rows; want one per row, several rows of 40 tokens", i+1, r["updates"], r["rows"])
		}
		updates += int(r["updates"])
	}
	st, err := run.ReadState(2)
	if err != nil {
		t.Fatal(err)
	}
	if st.OptimizerStep != updates {
		t.Errorf("optimizer updates %d saved, metrics say %d", st.OptimizerStep, updates)
	}
	// Stop after step 1, resume to step 2.
	if err := runWith(context.Background(), backend(t), opts("resumed", 1), textLog(&log)); err != nil {
		t.Fatal(err)
	}
	o := opts("resumed", 2)
	o.Resume = true
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatal(err)
	}
	a, err := os.ReadFile(filepath.Join(run.StepDir(2), "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "adapters", "resumed", runfolder.StepName(2), "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("resumed --norm art run differs from the uninterrupted one")
	}
}

// TestARTOptionsRefused: the ART knobs' bad values and combinations are
// usage errors naming the flag, before anything is read or written.
func TestARTOptionsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, want string
		set        func(o *Options)
	}{
		{"balance out of range", "--advantage-balance", func(o *Options) { o.AdvantageBalance = 1.5 }},
		{"row length without art", "--packed-sequence-length", func(o *Options) { o.PackedSeqLen = 64 }},
		{"recomputed tis with art", "--tis-mode sampler", func(o *Options) { o.Loss.Norm, o.Loss.TIS = "art", 2 }},
		{"cosine without a horizon with art in watch mode", "--schedule-steps", func(o *Options) {
			o.Loss.Norm, o.Schedule, o.WatchDir, o.Inputs = "art", "cosine", dir, nil
		}},
		{"reward-std lr in watch mode", "--scale-lr-by-reward-std", func(o *Options) { o.ScaleLRByRewardStd, o.WatchDir, o.Inputs = true, dir, nil }},
		{"unknown level", "geometric_average", func(o *Options) { o.Loss.Level = "geometric" }},
		{"per-history token ratio", "per-history", func(o *Options) { o.Loss.RatioPerHistory = true }},
		{"unknown tis mode", "tis mode", func(o *Options) { o.Loss.TISMode = "precalculated" }},
		{"negative ratio cap", "max-is-weight", func(o *Options) { o.Loss.MaxISWeight = -1 }},
		{"kl penalty without art", "--norm art", func(o *Options) { o.Loss.KLPenaltyCoef = 0.1 }},
		{"negative kl penalty", "kl-penalty-coef", func(o *Options) { o.Loss.Norm, o.Loss.KLPenaltyCoef = "art", -0.1 }},
		{"infinite kl penalty", "kl-penalty-coef", func(o *Options) { o.Loss.Norm, o.Loss.KLPenaltyCoef = "art", math.Inf(1) }},
		{"unknown kl source", "kl-penalty-source", func(o *Options) {
			o.Loss.Norm, o.Loss.KLPenaltyCoef, o.Loss.KLPenaltySource = "art", 0.1, "learner"
		}},
		{"kl source without coef", "kl-penalty-source", func(o *Options) { o.Loss.Norm, o.Loss.KLPenaltySource = "art", "sample" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := baseOptions(filepath.Join(dir, "model"), filepath.Join(dir, "adapters"), "r", filepath.Join(dir, "a.parquet"))
			o.Backend = backend(t)
			tc.set(&o)
			err := Run(context.Background(), o)
			if !errors.Is(err, stageerr.ErrUsage) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want a usage error naming %q", err, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "adapters")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused run left %s behind (%v)", filepath.Join(dir, "adapters"), err)
	}
}

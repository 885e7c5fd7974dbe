package grpojob

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/train/grpo"
	"github.com/hone-rl/hone/train/model"
	"github.com/hone-rl/hone/train/tinymodel"
	"github.com/hone-rl/hone/train/trainer"
)

// tinyModel writes a 2-layer, hidden-32 Qwen3 model folder.
func tinyModel(t testing.TB, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "model")
	if err := tinymodel.Write(context.Background(), p, tinymodel.Options{Family: "qwen3", Hidden: 32, Layers: 2, Heads: 4, KVHeads: 2, Seed: 3}, ref.New()); err != nil {
		t.Fatal(err)
	}
	return p
}

// loadFixture loads the model folder md on be and the groups of the
// trajectory file in, laid out with the model's template.
func loadFixture(t testing.TB, md string, be kernels.Backend, in string) (*model.Model, []group) {
	t.Helper()
	m, err := model.Load(md, be)
	if err != nil {
		t.Fatal(err)
	}
	text, err := layout.LoadModel(md)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := loadGroups(context.Background(), text, fileset.Files(in), loadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return m, gs
}

// stepExamples writes nGroups groups of size trajectories (writeGroups,
// varied rewards) for the model folder md, loads the model on be, and lays
// all the groups out as one step's examples.
func stepExamples(t testing.TB, md string, be kernels.Backend, nGroups, size int) (*model.Model, []trainer.Example) {
	t.Helper()
	in := filepath.Join(t.TempDir(), "g.parquet")
	writeGroups(t, md, in, nGroups, size, varied)
	m, gs := loadFixture(t, md, be, in)
	idx := make([]int, len(gs))
	for i := range idx {
		idx[i] = i
	}
	exs, _, skip := batch(gs, idx, grpo.ScaleGroup)
	if skip != "" {
		t.Fatal(skip)
	}
	return m, exs
}

// runWith is Run with the backend and the log set in o.
func runWith(ctx context.Context, be kernels.Backend, o Options, log *slog.Logger) error {
	o.Backend, o.Log = be, log
	return Run(ctx, o)
}

// backend is deterministic across processes: one worker, pure-Go GEMM.
func backend(t testing.TB) kernels.Backend {
	be, err := cpu.New(cpu.Options{Workers: 1, GEMM: "gonum"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be
}

// writeGroups writes nGroups groups of size trajectories each: a system
// and user message, then one sampled assistant turn (ids from the model's
// tokenizer plus <|im_end|>, logprob −2 each). rewards(g, i) gives each
// reward (NaN: an errored trajectory).
func writeGroups(t testing.TB, modelDir, path string, nGroups, size int, rewards func(g, i int) float64) {
	t.Helper()
	writeGroupsWith(t, modelDir, path, nGroups, size, func(g, i int) string { return fmt.Sprintf("move %d", (g*7+i*3)%10) }, rewards)
}

// writeGroupsWith is writeGroups with the assistant's answers given.
func writeGroupsWith(t testing.TB, modelDir, path string, nGroups, size int, answerOf func(g, i int) string, rewards func(g, i int) float64) {
	t.Helper()
	text, err := layout.LoadModel(modelDir)
	if err != nil {
		t.Fatal(err)
	}
	var gs []trajectory.Group
	for g := range nGroups {
		// Named by the file's base name as the user names it: an object
		// URL's query (endpoint=http://…) would give every object of a
		// store the same ids.
		grp := trajectory.Group{ID: fmt.Sprintf("%s-g%d", filepath.Base(fileset.DisplayName(path)), g)}
		for i := range size {
			answer := answerOf(g, i)
			var ids []int32
			for _, id := range text.Tokenizer.Encode(answer, false) {
				ids = append(ids, int32(id))
			}
			ids = append(ids, 258) // <|im_end|>
			lps := make([]float32, len(ids))
			for k := range lps {
				lps[k] = -2 + 0.1*float32(k%3)
			}
			tr := trajectory.Trajectory{
				ID: fmt.Sprintf("%s-t%d", grp.ID, i), GroupID: grp.ID, ScenarioID: fmt.Sprint(g),
				Messages: []trajectory.Message{
					{Role: "system", Content: "play"},
					{Role: "user", Content: fmt.Sprintf("board %d", g)},
					{Role: "assistant", Content: answer, Trainable: true, TokenIDs: ids, Logprobs: lps, FinishReason: "stop"},
				},
			}
			if r := rewards(g, i); math.IsNaN(r) {
				tr.Error = "env failed"
			} else {
				tr.Reward = trajectory.Float64(r)
			}
			grp.Trajectories = append(grp.Trajectories, tr)
		}
		gs = append(gs, grp)
	}
	if err := trajectory.WriteFile(context.Background(), path, gs, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
}

// varied gives rewards that differ within each group.
func varied(g, i int) float64 { return float64((g+i)%3) / 2 }

// baseOptions are fast GRPO options over one input file.
func baseOptions(modelDir, out, run string, inputs ...string) Options {
	var o Options
	fs := newFlagSet()
	o.AddFlags(fs)
	o.Model, o.Out, o.Name = modelDir, out, run
	if len(inputs) > 0 { // watch mode has none, and saves no "inputs"
		o.Inputs = fileset.Files(inputs...)
	}
	o.Rank, o.Alpha, o.LR, o.MaxGradNorm = 4, 8, 1e-2, 1
	o.GroupsPerStep, o.Epochs, o.TokenBudget = 2, 1, 64
	return o
}

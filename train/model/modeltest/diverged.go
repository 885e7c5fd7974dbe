// Package modeltest writes adapter runs for tests of the stages that
// serve or call a model (hone-serve, hone-collect, hone-score).
package modeltest

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/train/model"
)

// WriteDivergedRun writes the adapter run named run under adaptersDir,
// for the model folder modelDir: one step (1, "latest" pointing to it)
// whose LoRA B weights are ±3e38 on every module. They are finite, so
// hone-serve's loader takes the step (it refuses NaN and Inf), and so
// large that a tiny model's logits under it are all NaN, as after a
// training step that diverged.
func WriteDivergedRun(t testing.TB, modelDir, adaptersDir, run string) {
	t.Helper()
	m, err := model.Load(modelDir, ref.New())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ad, err := model.NewAdapter(&m.Config, model.AdapterConfig{Rank: 4, Alpha: 8, Targets: model.AllModules()}, 1)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, layer := range ad.Layers {
		for _, lr := range layer {
			if lr == nil {
				continue
			}
			for i := range lr.B {
				lr.B[i] = 3e38
				if rng.IntN(2) == 0 {
					lr.B[i] = -3e38
				}
			}
		}
	}
	runDir := filepath.Join(adaptersDir, run)
	if err := model.WriteAdapter(filepath.Join(runDir, runfolder.StepName(1)), ad, modelDir); err != nil {
		t.Fatal(err)
	}
	if err := runfolder.WritePointer(runDir, runfolder.LatestName, 1); err != nil {
		t.Fatal(err)
	}
}

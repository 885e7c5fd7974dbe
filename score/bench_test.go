package score_test

import (
	"context"
	"io"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/score"
)

// BenchmarkEnvFormula scores 500 groups × 8 trajectories read from a
// Parquet file with env and a formula, writing Parquet: the cost of
// hone-score itself, without a judge.
func BenchmarkEnvFormula(b *testing.B) {
	in := writeInput(b, "bench.parquet", groups(500, 8))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		opts := score.Options{Scorers: []string{"env", "formula:win - 0.1*illegal"}, OnJudgeError: score.PolicyFail,
			Concurrency: 2, Inputs: fileset.Files(in), Out: io.Discard}
		sum, err := scoreRun(context.Background(), opts)
		if err != nil || sum.Written != 4000 {
			b.Fatal(sum, err)
		}
	}
	b.ReportMetric(float64(4000*b.N)/b.Elapsed().Seconds(), "rows/s")
}

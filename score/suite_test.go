package score_test

import (
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/score"
	"github.com/hone-rl/hone/score/formula"
	"github.com/hone-rl/hone/score/judge"
	"github.com/hone-rl/hone/score/judge/judgetest"
	"github.com/hone-rl/hone/score/ruler"
	"github.com/hone-rl/hone/score/scoretest"
)

func TestScorerSuite(t *testing.T) {
	g := groups(1, 3)[0]
	for i := range g.Trajectories {
		tr := &g.Trajectories[i]
		tr.RewardComponents = []trajectory.RewardComponent{{Name: "env", Value: *tr.Reward}}
	}
	f, err := formula.New("shaped", "win - 0.1*illegal + env")
	if err != nil {
		t.Fatal(err)
	}
	fake := &judge.Fake{Answer: func(_ int, r judge.Request) (string, error) {
		return judgetest.Answer(r.IDs, []float64{1, 0.5, 0}), nil
	}}
	for _, s := range []score.Scorer{
		score.EnvScorer{},
		f,
		&ruler.Scorer{Component: "ruler", Judge: fake, Model: "m"},
	} {
		t.Run(s.Name(), func(t *testing.T) { scoretest.Suite(t, s, g) })
	}
}

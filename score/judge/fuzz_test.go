package judge_test

import (
	"math"
	"testing"

	"github.com/hone-rl/hone/score/judge"
	"github.com/hone-rl/hone/score/judge/judgetest"
)

// FuzzParse: whatever a judge answers, Parse never panics, and what it
// accepts covers every requested id once with a score in [0,1].
func FuzzParse(f *testing.F) {
	f.Add(judgetest.Answer([]string{"1", "2"}, []float64{0.5, 1}), 2)
	f.Add("```json\n"+judgetest.Answer([]string{"2", "1"}, []float64{0, 1})+"\n```", 2)
	f.Add(`{"scores":[{"trajectory_id":"1","score":1e400,"explanation":""}]}`, 1)
	f.Add(`{"scores":[{"trajectory_id":1,"score":"0.5"}]}`, 1)
	f.Add(`{"scores":null}`, 0)
	f.Add(`[]`, 3)
	f.Add("", 1)
	f.Fuzz(func(t *testing.T, answer string, n int) {
		n = ((n % 8) + 8) % 8
		req := judge.Request{}
		for i := 1; i <= n; i++ {
			req.IDs = append(req.IDs, string(rune('0'+i)))
		}
		scores, err := judge.Parse(req, answer)
		if err != nil {
			return
		}
		if len(scores) != n {
			t.Fatalf("%d scores for %d ids", len(scores), n)
		}
		for i, s := range scores {
			if s.ID != req.IDs[i] || math.IsNaN(s.Score) || s.Score < 0 || s.Score > 1 {
				t.Fatalf("score %d = %+v", i, s)
			}
		}
	})
}

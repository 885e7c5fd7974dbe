package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/score/judge/judgetest"
)

// TestJudgeScoreWrittenAsText: a judge without structured output
// (--judge-response-format none) may write a score as a string ("0.5")
// or a list id as a number, which ART's pydantic answer model takes; here
// the answer failed, and the error (retried, then in each row under mark)
// read "cannot unmarshal string into Go struct field keyedScore.score of
// type float64". Such a score is now read, and a score that is no number
// is named in words.
func TestJudgeScoreWrittenAsText(t *testing.T) {
	dir := t.TempDir()
	in := scenario(t, dir, "in.parquet", 0, 1, 2)
	out := filepath.Join(dir, "out.parquet")
	for _, c := range []struct{ name, answer, want string }{
		{"keyed", `{"scores": {"1": {"explanation": "won", "score": "0.5"}, "2": {"explanation": "lost", "score": " 0.25 "}}}`, ""},
		{"list", `{"scores": [{"trajectory_id": 1, "explanation": "won", "score": "0.5"}, {"trajectory_id": 2, "explanation": "lost", "score": 0.25}]}`, ""},
		{"bool", `{"scores": {"1": {"explanation": "won", "score": true}, "2": {"explanation": "lost", "score": 0}}}`, `score is true: want a number`},
		{"word", `{"scores": {"1": {"explanation": "won", "score": "high"}, "2": {"explanation": "lost", "score": 0}}}`, `score is \"high\": want a number`},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply { return judgetest.Reply{Content: c.answer} })
			r := runBin(t, nil, nil, "-o", out, "--judge-base-url", srv.BaseURL(), "--judge-model", "m", "--no-judge-cache",
				"--judge-response-format", "none", "--judge-retries", "0", "--on-judge-error", "mark", "--scorer", "ruler", in)
			if c.want == "" {
				if r.code != 0 {
					t.Fatalf("exit %d, want 0:\n%s", r.code, r.stderr)
				}
				gs := readBack(t, out)
				a, _ := component(gs[0].Trajectories[0], "ruler")
				b, _ := component(gs[0].Trajectories[1], "ruler")
				if a != 0.5 || b != 0.25 {
					t.Fatalf("ruler %v and %v, want 0.5 and 0.25", a, b)
				}
				return
			}
			if r.code != 1 || !strings.Contains(r.stderr, c.want) || strings.Contains(r.stderr, "Go struct") {
				t.Fatalf("exit %d, want 1 with %q and no Go type names:\n%s", r.code, c.want, r.stderr)
			}
		})
	}
}

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/score/judge/judgetest"
)

// TestJudgeWrongCountNamesIDs: a judge that scores the wrong trajectories
// (one left out, one it made up) fails the group with an error naming the
// ids it left out and the ones it invented, not only the two counts: with
// a group of eight, "7 scores for 8 trajectories" does not tell a user
// whether the judge dropped the last block (a cut answer) or misnumbered
// them. The error is one line. A judge that answers for the wrong
// trajectories is a scripted server: the real hone-serve decodes under the
// schema and cannot be made to.
func TestJudgeWrongCountNamesIDs(t *testing.T) {
	dir := t.TempDir()
	in := scenario(t, dir, "in.parquet", 0, 1, 3)
	cases := map[string]struct {
		ids  []string
		want []string
	}{
		"one missing":       {[]string{"1", "2"}, []string{"2 scores for 3 trajectories", `no score for trajectory_id "3"`}},
		"one extra":         {[]string{"1", "2", "3", "9"}, []string{"4 scores for 3 trajectories", `unknown trajectory_id "9"`}},
		"one misnumbered":   {[]string{"0", "1", "2"}, []string{`unknown trajectory_id "0"`, `no score for trajectory_id "3"`}},
		"missing and extra": {[]string{"1", "7"}, []string{`unknown trajectory_id "7"`, `no score for trajectory_id "2"`, `no score for trajectory_id "3"`}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			srv := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply {
				return judgetest.Reply{Content: judgetest.Answer(c.ids, make([]float64, len(c.ids)))}
			})
			r := runBin(t, nil, nil, "-o", filepath.Join(t.TempDir(), "out.parquet"), "--scorer", "ruler", "--judge-model", "m",
				"--judge-base-url", srv.BaseURL(), "--no-judge-cache", "--judge-retries", "0", in)
			if r.code != 1 {
				t.Fatalf("exit %d (want 1: the judge's answer is malformed under --on-judge-error fail):\n%s", r.code, r.stderr)
			}
			// On the one line that names the group: the error also goes into
			// a log line and, under mark, each row's error column.
			var line string
			for l := range strings.Lines(r.stderr) {
				if strings.Contains(l, "judge malformed") {
					line = l
				}
			}
			for _, w := range c.want {
				if !strings.Contains(line, w) {
					t.Errorf("the error line lacks %q:\n%s", w, r.stderr)
				}
			}
		})
	}
}

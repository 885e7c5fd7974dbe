package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/score/judge/judgetest"
)

// TestJudgeFlagsWithoutRulerWarned: the judge's flags given with no ruler
// scorer in the chain (the --scorer ruler forgotten) were read and
// dropped without a word: the run scored with env or a formula alone and
// a user took the rewards for the judge's. They are warned of now, each
// named, as hone-train warns of the flags a call does not read; the run
// goes on (a script may pass them on every call). With a ruler scorer,
// under any name, no such warning.
func TestJudgeFlagsWithoutRulerWarned(t *testing.T) {
	srv := judgetest.NewServer(t, judgetest.KeywordJudge("WIN"))
	dir := t.TempDir()
	in := scenario(t, dir, "in.parquet", 0, 1, 2)
	rubric := filepath.Join(dir, "rubric.md")
	if err := os.WriteFile(rubric, []byte("Reward the win."), 0o644); err != nil {
		t.Fatal(err)
	}
	judgeFlags := []string{"--judge-model", "m", "--judge-base-url", srv.BaseURL(), "--rubric", rubric, "--no-judge-cache", "--judge-retries", "1"}
	const warning = "do nothing without a ruler scorer"
	for _, c := range []struct {
		name    string
		scorers []string
		warned  bool
	}{
		{"no scorer given", nil, true},
		{"env and formula", []string{"--scorer", "env", "--scorer", "formula:0.5*reward"}, true},
		{"ruler", []string{"--scorer", "ruler"}, false},
		{"named ruler", []string{"--scorer", "judged=ruler"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"-o", filepath.Join(t.TempDir(), "out.parquet")}, judgeFlags...)
			args = append(append(args, c.scorers...), in)
			r := runBin(t, nil, nil, args...)
			if r.code != 0 {
				t.Fatalf("exit %d, want 0:\n%s", r.code, r.stderr)
			}
			if !c.warned {
				if strings.Contains(r.stderr, warning) {
					t.Errorf("warned of judge flags with a ruler scorer:\n%s", r.stderr)
				}
				return
			}
			var line string
			for l := range strings.Lines(r.stderr) {
				if strings.Contains(l, warning) {
					line = l
				}
			}
			for _, f := range []string{"--judge-model", "--judge-base-url", "--rubric", "--no-judge-cache", "--judge-retries", "--scorer ruler"} {
				if !strings.Contains(line, f) {
					t.Errorf("no warning line naming %s:\n%s", f, r.stderr)
				}
			}
			if srv.Hits() != 0 {
				t.Errorf("the judge was called %d times with no ruler scorer", srv.Hits())
			}
		})
	}
}

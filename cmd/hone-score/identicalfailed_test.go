package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/score/judge/judgetest"
)

// TestIdenticalGroupNotCountedWhenJudgeFailed: a group whose tries are
// all identical was counted for the run's warning "the judge scored one
// of each on an absolute scale" before the judge was asked, so a run
// whose judge failed that group (under --on-judge-error skip or mark,
// the judge failing every group included, whose output is kept and
// warned of) said the judge had scored it. Only a group the judge
// answered for is counted now.
func TestIdenticalGroupNotCountedWhenJudgeFailed(t *testing.T) {
	dir := t.TempDir()
	same := oneGroupEdited(t, dir, "same.parquet", func(gs []trajectory.Group) {
		gs[0].Trajectories[1].Messages = gs[0].Trajectories[0].Messages
	})
	out := filepath.Join(dir, "out.parquet")
	const identical = "groups whose trajectories are all identical"
	down := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply { return judgetest.Reply{Status: 500} })
	for _, policy := range []string{"skip", "mark"} {
		r := runBin(t, nil, nil, "-o", out, "--scorer", "ruler", "--on-judge-error", policy,
			"--judge-base-url", down.BaseURL(), "--judge-model", "m", "--no-judge-cache", "--judge-retries", "0", same)
		if r.code != 1 || !strings.Contains(r.stderr, "judge failed every group") {
			t.Fatalf("%s: exit %d, want 1 and the judge failing every group:\n%s", policy, r.code, r.stderr)
		}
		if strings.Contains(r.stderr, identical) {
			t.Errorf("%s: said the judge scored an identical group it failed:\n%s", policy, r.stderr)
		}
	}
	up := judgetest.NewServer(t, judgetest.KeywordJudge("WIN"))
	r := runBin(t, nil, nil, "-o", out, "--scorer", "ruler", "--judge-base-url", up.BaseURL(), "--judge-model", "m", "--no-judge-cache", same)
	if r.code != 0 || !strings.Contains(r.stderr, identical) {
		t.Errorf("a judge that answered: exit %d, want 0 and the identical-groups warning:\n%s", r.code, r.stderr)
	}
}

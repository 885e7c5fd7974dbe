package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/score/judge/judgetest"
)

// TestJudgeTimeoutNamesFlag: a judge that does not answer within
// --judge-timeout fails its group with an error that names the flag. The
// error said only "judge timeout: no answer within 200ms", which leaves a
// user of a slow local judge (a small model on CPU) guessing which of
// hone-score's limits it was. A stalling judge is a scripted server: the
// real hone-serve cannot be made to stall on demand.
func TestJudgeTimeoutNamesFlag(t *testing.T) {
	dir := t.TempDir()
	in := scenario(t, dir, "in.parquet", 0, 1, 2)
	srv := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply {
		return judgetest.Reply{Delay: time.Minute} // held until the client gives up
	})
	r := runBin(t, nil, nil, "-o", filepath.Join(dir, "out.parquet"), "--scorer", "ruler", "--judge-model", "m",
		"--judge-base-url", srv.BaseURL(), "--no-judge-cache", "--judge-retries", "0", "--judge-timeout", "200ms", in)
	if r.code != 1 {
		t.Fatalf("exit %d (want 1: the group's judge call timed out under --on-judge-error fail):\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "no answer within 200ms") || !strings.Contains(r.stderr, "--judge-timeout") {
		t.Fatalf("the timeout error does not name --judge-timeout:\n%s", r.stderr)
	}
}

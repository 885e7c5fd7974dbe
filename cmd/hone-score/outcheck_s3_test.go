package main

import (
	"strings"
	"testing"

	"github.com/hone-rl/hone/internal/fakes3d"
	"github.com/hone-rl/hone/score/judge/judgetest"
)

// TestOutputStoreRefusesWritesFailsBeforeScoring: -o naming an object
// in a store that refuses this writer's writes (credentials that may
// only read) fails before any judge call, exit 1, with the store's
// refusal. The pre-flight asked only whether the bucket was there: every
// judge call was paid for, and the upload at the end failed.
func TestOutputStoreRefusesWritesFailsBeforeScoring(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	a := scenario(t, t.TempDir(), "a.parquet", 0, 3, 4)
	srv := judgetest.NewServer(t, judgetest.KeywordJudge("WIN"))
	env := []string{"OPENAI_API_KEY=k", "OPENAI_BASE_URL=" + srv.BaseURL()}
	s3.RefuseWrites(true)
	r := runBin(t, env, nil, "-o", s3.URL("hone", "scored/1.parquet"), "--judge-model", "judge-m", "--scorer", "ruler", a)
	if r.code != 1 || !strings.Contains(r.stderr, "s3://hone/scored/1.parquet") || !strings.Contains(r.stderr, "AccessDenied") {
		t.Errorf("-o in a store refusing writes: exit %d, %q; want exit 1 with the store's refusal", r.code, r.stderr)
	}
	if srv.Hits() != 0 {
		t.Errorf("the judge was called %d times before the refused output was noticed", srv.Hits())
	}
}

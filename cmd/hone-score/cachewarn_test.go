package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/score/judge/judgetest"
)

// TestUnwritableJudgeCacheWarnsOnce scores five groups with a judge
// cache that can be neither read nor written (its folder would sit under
// a regular file). The run goes on without the cache, as it should, but
// it warned twice for every group (an unreadable entry, then a verdict it
// could not store): a run of thousands of groups buried its log in them.
// Each kind of failure is warned of once a run now, naming the cache.
func TestUnwritableJudgeCacheWarnsOnce(t *testing.T) {
	dir := t.TempDir()
	in := scenario(t, dir, "in.parquet", 0, 5, 2)
	file := filepath.Join(dir, "not-a-folder")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := judgetest.NewServer(t, judgetest.KeywordJudge("WIN"))
	r := runBin(t, nil, nil, "-o", filepath.Join(dir, "out.parquet"), "--judge-base-url", srv.BaseURL(), "--judge-model", "m",
		"--judge-cache", filepath.Join(file, "cache"), "--scorer", "ruler", in)
	if r.code != 0 || !strings.Contains(r.stderr, "5 scored") {
		t.Fatalf("exit %d, want 0 with 5 groups scored:\n%s", r.code, r.stderr)
	}
	for _, msg := range []string{"judge cache: unreadable entry", "judge cache: cannot store verdict"} {
		if n := strings.Count(r.stderr, msg); n != 1 {
			t.Errorf("%q logged %d times for 5 groups, want once:\n%s", msg, n, r.stderr)
		}
	}
}

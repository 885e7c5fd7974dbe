package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/score/judge/judgetest"
)

// TestJudgeBareListSaysShape: a judge that answers ART's list of scores
// without the "scores" key around it fails the group with an error saying
// what shape is wanted. It said "json: cannot unmarshal array into Go
// value of type judge.answer", which names a Go type the user never sees
// and not the key that is missing. The real hone-serve decodes under the
// schema and cannot be made to answer so; a scripted server does.
func TestJudgeBareListSaysShape(t *testing.T) {
	dir := t.TempDir()
	in := scenario(t, dir, "in.parquet", 0, 1, 2)
	srv := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply {
		return judgetest.Reply{Content: `[{"trajectory_id": "1", "explanation": "won", "score": 1}, {"trajectory_id": "2", "explanation": "lost", "score": 0}]`}
	})
	r := runBin(t, nil, nil, "-o", filepath.Join(dir, "out.parquet"), "--scorer", "ruler", "--judge-model", "m",
		"--judge-base-url", srv.BaseURL(), "--no-judge-cache", "--judge-retries", "0", in)
	if r.code != 1 {
		t.Fatalf("exit %d (want 1: the answer is malformed under --on-judge-error fail):\n%s", r.code, r.stderr)
	}
	for _, w := range []string{`a list without "scores"`, `{"scores": …}`} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "judge.answer") {
		t.Errorf("the error names a Go type:\n%s", r.stderr)
	}
}

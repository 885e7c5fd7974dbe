package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/score/judge/judgetest"
)

// TestJudgeNotOpenAIAnswerNamesURL: a --judge-base-url pointing at a web
// page (a proxy's login page, a chat UI) answers 200 with HTML, and the
// run failed with the OpenAI client's "expected destination type of
// 'string' or '[]byte' for responses with content-type …", retried each
// group for nothing and never said which flag to check. Now the error
// says the judge answered something that is not a chat completion (its
// content type and first bytes, quoted), names --judge-base-url masked,
// is not retried, and stops the run under any --on-judge-error, as a 404
// does: every group would get the same page. A 200 that is not JSON is a
// scripted server: the real hone-serve cannot be made to answer one.
func TestJudgeNotOpenAIAnswerNamesURL(t *testing.T) {
	const page = "<!doctype html>\n<html><title>Sign in</title>\x1b[0m"
	for _, policy := range []string{"fail", "skip", "mark"} {
		t.Run(policy, func(t *testing.T) {
			srv := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply {
				return judgetest.Reply{Body: page, Header: map[string]string{"Content-Type": "text/html; charset=utf-8"}}
			})
			dir := t.TempDir()
			in := scenario(t, dir, "in.parquet", 0, 3, 2)
			base := strings.Replace(srv.BaseURL(), "http://", "http://tok3n@", 1)
			r := runBin(t, nil, nil, "-o", filepath.Join(dir, "out.parquet"), "--scorer", "ruler", "--judge-model", "m",
				"--judge-base-url", base, "--no-judge-cache", "--judge-retries", "3", "--concurrency", "1",
				"--on-judge-error", policy, in)
			if r.code != 1 {
				t.Fatalf("exit %d, want 1:\n%s", r.code, r.stderr)
			}
			for _, w := range []string{"not an OpenAI chat completion", `"text/html; charset=utf-8"`, `"<!doctype html>\n<html><title>Sign in</title>\x1b[0m"`,
				"check --judge-base-url http://xxxxx@127.0.0.1:", "stopping under any --on-judge-error"} {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if strings.Contains(r.stderr, "tok3n") || strings.Contains(r.stderr, "expected destination type") {
				t.Errorf("stderr shows the token or the client's message:\n%s", r.stderr)
			}
			if n := srv.Hits(); n != 1 {
				t.Errorf("the judge was asked %d times, want 1: a web page at the URL will not turn into a judge", n)
			}
		})
	}
}

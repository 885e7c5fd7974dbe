package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/score/judge/judgetest"
)

// TestJudgeBaseURLSecretMasked: hone-score logged its judge's
// --judge-base-url as given at the start of every run, a password or a
// token in its userinfo included, and a judge's error answer named a
// token user whole, as did the error of a judge unreachable (net/http
// masks a password only). stderr ends up in CI logs; both are masked now.
func TestJudgeBaseURLSecretMasked(t *testing.T) {
	const secret = "s3cr3tpw"
	srv := judgetest.NewServer(t, judgetest.KeywordJudge("WIN"))
	refusing := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply { return judgetest.Reply{Status: 400} })
	for _, c := range []struct {
		name, userinfo string
		judge          *judgetest.Server
		code           int
	}{
		{"password", "hone:" + secret, srv, 0},
		{"token", secret, srv, 0},
		{"token, judge refuses", secret, refusing, 1},
		{"token, judge unreachable", secret, nil, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			in := scenario(t, dir, "in.parquet", 0, 1, 2)
			base := "http://127.0.0.1:1/v1" // nothing listens on port 1
			if c.judge != nil {
				base = c.judge.BaseURL()
			}
			base = strings.Replace(base, "http://", "http://"+c.userinfo+"@", 1)
			r := runBin(t, nil, nil, "-o", filepath.Join(dir, "out.parquet"), "--judge-base-url", base, "--judge-model", "m",
				"--no-judge-cache", "--judge-retries", "0", "--scorer", "ruler", in)
			if r.code != c.code {
				t.Fatalf("exit %d, want %d:\n%s", r.code, c.code, r.stderr)
			}
			if strings.Contains(r.stderr, secret) || strings.Contains(r.stdout, secret) {
				t.Errorf("output shows the secret:\n%s%s", r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, "xxxxx@") {
				t.Errorf("stderr does not show the judge's URL, masked:\n%s", r.stderr)
			}
		})
	}
}

// TestJudgeCacheEntryMasksSecret: each judge-cache entry records the
// judge's base URL for people reading the cache, and recorded it as
// given: a password or token in its userinfo was in every entry file, in
// a cache folder or bucket that others read. The entry names it masked;
// its key, a hash, still tells the servers apart.
func TestJudgeCacheEntryMasksSecret(t *testing.T) {
	const secret = "s3cr3tpw"
	srv := judgetest.NewServer(t, judgetest.KeywordJudge("WIN"))
	dir := t.TempDir()
	in := scenario(t, dir, "in.parquet", 0, 1, 2)
	cache := filepath.Join(dir, "cache")
	base := strings.Replace(srv.BaseURL(), "http://", "http://hone:"+secret+"@", 1)
	r := runBin(t, nil, nil, "-o", filepath.Join(dir, "out.parquet"), "--judge-base-url", base, "--judge-model", "m",
		"--judge-cache", cache, "--scorer", "ruler", in)
	if r.code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", r.code, r.stderr)
	}
	var entries int
	err := filepath.WalkDir(cache, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		entries++
		if strings.Contains(string(b), secret) || !strings.Contains(string(b), "hone:xxxxx@") {
			t.Errorf("%s does not name the judge's URL, masked: %s", path, b)
		}
		return nil
	})
	if err != nil || entries == 0 {
		t.Fatalf("cache %s: %d entries (%v), want one", cache, entries, err)
	}
}

// TestJudgeBaseURLCredentialsWarned: a password or token in
// --judge-base-url's userinfo is never sent: the judge's OpenAI client
// sends its own Authorization: Bearer <API key>, no Basic auth, so a
// judge that needs them answered every call 401 with no word of why.
// hone-score warns once at start that they are not sent and to use
// --judge-api-key or $OPENAI_API_KEY, without printing them.
func TestJudgeBaseURLCredentialsWarned(t *testing.T) {
	const secret = "s3cr3tpw"
	srv := judgetest.NewServer(t, judgetest.KeywordJudge("WIN"))
	for _, userinfo := range []string{"hone:" + secret, secret} {
		t.Run(userinfo, func(t *testing.T) {
			dir := t.TempDir()
			in := scenario(t, dir, "in.parquet", 0, 1, 2)
			base := strings.Replace(srv.BaseURL(), "http://", "http://"+userinfo+"@", 1)
			r := runBin(t, nil, nil, "-o", filepath.Join(dir, "out.parquet"), "--judge-base-url", base, "--judge-model", "m",
				"--no-judge-cache", "--judge-retries", "0", "--scorer", "ruler", in)
			if r.code != 0 {
				t.Fatalf("exit %d:\n%s", r.code, r.stderr)
			}
			if strings.Contains(r.stderr, secret) || strings.Contains(r.stdout, secret) {
				t.Errorf("output shows the secret:\n%s%s", r.stdout, r.stderr)
			}
			if n := strings.Count(r.stderr, "are not sent"); n != 1 || !strings.Contains(r.stderr, "--judge-api-key or $OPENAI_API_KEY") {
				t.Errorf("warned %d times, want once, naming --judge-api-key or $OPENAI_API_KEY:\n%s", n, r.stderr)
			}
		})
	}
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("the judge got no call")
	}
	for _, q := range reqs {
		if !strings.HasPrefix(q.Auth, "Bearer ") {
			t.Errorf("the judge got Authorization %q; the warning says the URL's credentials are not sent, as the client sends a Bearer key only", q.Auth)
		}
	}
}

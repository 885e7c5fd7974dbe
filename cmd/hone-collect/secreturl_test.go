package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestBaseURLPasswordMasked: a --base-url with a password in its userinfo
// (http://user:pw@host/v1) never shows the password in what hone-collect
// prints: not in the stop at a model the server does not serve, at a
// --max-tokens over its cap, at a base URL without its /v1, at a server
// that refuses connections, nor in the usage error of a URL that is no
// http(s) one. They printed the URL as given, and stderr ends up in CI
// logs read by more people than the server's password is given to.
func TestBaseURLPasswordMasked(t *testing.T) {
	const secret = "s3cr3tpw"
	base := startServe(t)
	withPw := strings.Replace(base, "http://", "http://hone:"+secret+"@", 1)
	for _, c := range []struct {
		name, base, model, maxTokens string
		code                         int
	}{
		{"model not found", withPw, "no-such-model", "4", 1},
		{"max-tokens over the cap", withPw, "tiny", "5000", 1},
		{"no /v1", strings.TrimSuffix(withPw, "/v1"), "tiny", "4", 1},
		{"connection refused", "http://hone:" + secret + "@127.0.0.1:1/v1", "tiny", "4", 1},
		{"not http", "ftp://hone:" + secret + "@127.0.0.1:1/v1", "tiny", "4", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.parquet")
			r := collectBin(t, "--env", "guess", "--groups", "1", "-G", "2", "--concurrency", "1", "--model", c.model,
				"--base-url", c.base, "--max-tokens", c.maxTokens, "--retries", "0", "-o", out)
			if r.code != c.code {
				t.Fatalf("exit %d, want %d: %s", r.code, c.code, r.stderr)
			}
			if strings.Contains(r.stderr, secret) || strings.Contains(r.stdout, secret) {
				t.Errorf("output shows the password:\n%s%s", r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, "hone:") {
				t.Errorf("stderr does not name the URL's user:\n%s", r.stderr)
			}
		})
	}
}

// TestBaseURLTokenMasked: a --base-url whose userinfo is a user alone
// carries a token (http://sk-TOKEN@host/v1), which hone-collect printed
// whole: in the stop at a model not found, and in each failed episode's
// warning and the stop at an unreachable server, through net/http's
// error, which masks a password only. The token is masked everywhere.
func TestBaseURLTokenMasked(t *testing.T) {
	const token = "sk-t0k3n"
	base := startServe(t)
	for _, c := range []struct{ name, base, model string }{
		{"model not found", strings.Replace(base, "http://", "http://"+token+"@", 1), "no-such-model"},
		{"connection refused", "http://" + token + "@127.0.0.1:1/v1", "tiny"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.parquet")
			r := collectBin(t, "--env", "guess", "--groups", "1", "-G", "2", "--concurrency", "1", "--model", c.model,
				"--base-url", c.base, "--max-tokens", "4", "--retries", "0", "-o", out)
			if r.code != 1 {
				t.Fatalf("exit %d, want 1: %s", r.code, r.stderr)
			}
			if strings.Contains(r.stderr, token) || strings.Contains(r.stdout, token) {
				t.Errorf("output shows the token:\n%s%s", r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, "xxxxx@") {
				t.Errorf("stderr does not show the URL, its token masked:\n%s", r.stderr)
			}
		})
	}
}

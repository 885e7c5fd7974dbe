package main

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestBaseURLPasswordMasked: a --base-url with a password in its userinfo
// (http://user:pw@host/v1) never shows the password in what hone-collect
// prints: not in the stop at a model the server does not serve, at a
// --max-tokens over its cap, at a base URL without its /v1, at a server
// that refuses connections, nor in the usage error of a URL that is no
// http(s) one or does not parse (a space or a stray '%' in the password). They printed the URL as given, and stderr ends up in CI
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
		{"password that does not parse", "http://hone:" + secret + " x%zz@127.0.0.1:1/v1", "tiny", "4", 2},
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

// TestBaseURLCredentialsWarned: a password or token in --base-url's
// userinfo (http://user:pw@host/v1) is never sent: the OpenAI client
// sends its own Authorization: Bearer <API key>, no Basic auth, so a
// server that needs them answered every call 401 with no word of why.
// hone-collect warns once at start that they are not sent and to use
// --api-key or $OPENAI_API_KEY, without printing them.
func TestBaseURLCredentialsWarned(t *testing.T) {
	const secret = "s3cr3tpw"
	var mu sync.Mutex
	var auths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	defer srv.Close()
	for _, userinfo := range []string{"hone:" + secret, secret} {
		t.Run(userinfo, func(t *testing.T) {
			base := strings.Replace(srv.URL, "http://", "http://"+userinfo+"@", 1) + "/v1"
			r := collectBin(t, "--env", "guess", "--groups", "1", "-G", "2", "--concurrency", "1", "--model", "m",
				"--base-url", base, "--max-tokens", "4", "--retries", "0", "-o", filepath.Join(t.TempDir(), "out.parquet"))
			if strings.Contains(r.stderr, secret) || strings.Contains(r.stdout, secret) {
				t.Errorf("output shows the secret:\n%s%s", r.stdout, r.stderr)
			}
			if n := strings.Count(r.stderr, "are not sent"); n != 1 || !strings.Contains(r.stderr, "--api-key or $OPENAI_API_KEY") {
				t.Errorf("warned %d times, want once, naming --api-key or $OPENAI_API_KEY:\n%s", n, r.stderr)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auths) == 0 {
		t.Fatal("the server got no call")
	}
	for _, a := range auths {
		if !strings.HasPrefix(a, "Bearer ") {
			t.Errorf("the server got Authorization %q; the warning says the URL's credentials are not sent, as the client sends a Bearer key only", a)
		}
	}
}

// TestScenariosBaseURLCredentialsWarned: hone-collect scenarios warns of
// credentials in --base-url's userinfo too, masked, before it starts the
// MCP server (here one that is not there).
func TestScenariosBaseURLCredentialsWarned(t *testing.T) {
	const secret = "s3cr3tpw"
	r := collectBin(t, "scenarios", "--mcp-url", "http://127.0.0.1:1/mcp", "-n", "2", "--model", "m",
		"--base-url", "http://hone:"+secret+"@127.0.0.1:1/v1", "-o", filepath.Join(t.TempDir(), "tasks.jsonl"))
	if strings.Contains(r.stderr, secret) || strings.Count(r.stderr, "are not sent") != 1 || !strings.Contains(r.stderr, "--api-key or $OPENAI_API_KEY") {
		t.Errorf("exit %d; want one warning, the password masked, naming --api-key or $OPENAI_API_KEY:\n%s", r.code, r.stderr)
	}
}

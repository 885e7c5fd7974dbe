package main

import (
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// chatAnswers is the count hone-serve's /metrics gives of its chat
// answers with this status.
func chatAnswers(t *testing.T, baseURL string, status int) int {
	t.Helper()
	resp, err := http.Get(strings.TrimSuffix(baseURL, "/v1") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`hone_serve_requests_total\{endpoint="chat",status="` + strconv.Itoa(status) + `"\} (\d+)`)
	m := re.FindSubmatch(b)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// Regression: with a --model the server does not serve, every episode
// failed at its first call with a 404 model_not_found, and the run went
// through all of them before it exited 1 with its advice. The first such
// answer now stops the run: the episodes still in flight are cancelled,
// no other is started, and the error names the model, the base URL and
// the models the server lists. It writes nothing, so it prints no
// summary of its groups either, as a run refused for bad usage does: a
// "0/100 groups, 0 episodes" line above the error read as a run that was
// played and stopped.
func TestModelNotFoundStopsTheRun(t *testing.T) {
	base := startServe(t)
	out := filepath.Join(t.TempDir(), "out.parquet")
	r := collectBin(t, "--env", "guess", "--groups", "100", "-G", "4", "--concurrency", "2", "--model", "no-such-model",
		"--base-url", base, "--max-tokens", "4", "-o", out)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1: %s", r.code, r.stderr)
	}
	for _, want := range []string{`model "no-such-model"`, base, "model_not_found", "serves: tiny", "--model"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, " groups, ") {
		t.Errorf("stderr has a summary of groups for a run that wrote nothing:\n%s", r.stderr)
	}
	// Two workers: each sent at most the call it had in flight.
	if n := chatAnswers(t, base, http.StatusNotFound); n == 0 || n > 2 {
		t.Errorf("hone-serve answered %d chat calls with 404, want 1 or 2 (the run stopped at the first)", n)
	}
	if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("output %s: %v, want none written", out, err)
	}
	// A base URL without its /v1: the 404 has no code, and the run stops
	// there too, saying where the endpoint usually is.
	r = collectBin(t, "--env", "guess", "--groups", "100", "-G", "4", "--concurrency", "2", "--model", "tiny",
		"--base-url", strings.TrimSuffix(base, "/v1"), "--max-tokens", "4", "-o", out)
	if r.code != 1 || !strings.Contains(r.stderr, "usually ends in /v1") {
		t.Fatalf("exit %d, want 1 and the advice on /v1: %s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, " groups, ") {
		t.Errorf("stderr has a summary of groups for a run that wrote nothing:\n%s", r.stderr)
	}
}

package main

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect/openaitest"
)

// TestMaxTokensOverServerCapStopsTheRun: a --max-tokens the server can
// never grant (over hone-serve's own --max-tokens cap, or not below the
// model's context) is refused with a 400 on every call. Every episode
// failed at its first call, and the run went through all of them before
// it exited 1. The first such answer before any call was answered now
// stops the run, as a model that is not served does: exit 1, nothing
// written, no summary of groups, and the error names the flag and the
// server's cap.
func TestMaxTokensOverServerCapStopsTheRun(t *testing.T) {
	capped := startServe(t) // its --max-tokens: 4096, the tiny model's context
	// A cap above the context: the 400 is the context's.
	uncapped := "http://" + openaitest.StartProcess(t, filepath.Join(binDir, "hone-serve"), "--model", "../../serve/testdata/tiny",
		"--port", "0", "--threads", "1", "--max-tokens", "100000") + "/v1"
	for _, c := range []struct {
		name, base string
		wants      []string
		// The stop is worded by its cause: it began "over the server's
		// cap" for the model's context too.
		not string
	}{
		{"server cap", capped, []string{"--max-tokens over the server's cap: --max-tokens 5000", "cap of 4096"}, "context"},
		{"model context", uncapped, []string{"--max-tokens over the model's context: --max-tokens 5000", "context of 4096 tokens"}, "server's cap"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.parquet")
			r := collectBin(t, "--env", "guess", "--groups", "100", "-G", "4", "--concurrency", "2", "--model", "tiny",
				"--base-url", c.base, "--max-tokens", "5000", "-o", out)
			if r.code != 1 {
				t.Fatalf("exit %d, want 1: %s", r.code, r.stderr)
			}
			for _, w := range c.wants {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if strings.Contains(r.stderr, c.not) {
				t.Errorf("stderr says %q:\n%s", c.not, r.stderr)
			}
			if strings.Contains(r.stderr, " groups, ") {
				t.Errorf("stderr has a summary of groups for a run that wrote nothing:\n%s", r.stderr)
			}
			// Two workers: each sent at most the call it had in flight.
			if n := chatAnswers(t, c.base, http.StatusBadRequest); n == 0 || n > 2 {
				t.Errorf("hone-serve answered %d chat calls with 400, want 1 or 2 (the run stopped at the first)", n)
			}
			if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("output %s: %v, want none written", out, err)
			}
		})
	}
}

// TestHelpNamesMaxTokensStop: --help's exit codes and docs/art.md's
// "Failed episodes" name the stop at a first call refused for a
// --max-tokens over the server's cap, beside the 404's: a user whose run
// exits 1 there, writing nothing, finds it where the other stops are.
func TestHelpNamesMaxTokensStop(t *testing.T) {
	r := collectBin(t, "--help")
	start, end := strings.Index(r.stdout, "Exit codes:"), strings.Index(r.stdout, "Unlike ART")
	if r.code != 0 || start < 0 || end < start {
		t.Fatalf("--help: exit %d, no exit codes paragraph:\n%s", r.code, r.stdout)
	}
	codes := strings.Join(strings.Fields(r.stdout[start:end]), " ")
	if !strings.Contains(codes, "--max-tokens over the server's cap") {
		t.Errorf("--help's exit codes do not name the stop at a --max-tokens over the server's cap:\n%s", codes)
	}
	art, err := os.ReadFile("../../docs/art.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(art)
	start = strings.Index(doc, "**Failed episodes.**")
	if start < 0 {
		t.Fatal("docs/art.md has no \"Failed episodes\" paragraph")
	}
	para := doc[start:]
	if i := strings.Index(para, "\n\n"); i >= 0 {
		para = para[:i]
	}
	if !strings.Contains(strings.Join(strings.Fields(para), " "), "--max-tokens` over the server's cap") {
		t.Errorf("docs/art.md's \"Failed episodes\" does not name the stop at a --max-tokens over the server's cap:\n%s", para)
	}
}

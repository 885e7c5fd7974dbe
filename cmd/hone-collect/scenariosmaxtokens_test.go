package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestScenariosMaxTokensOverCap: hone-collect scenarios asking for more
// completion tokens than the server's cap failed with the server's words
// alone ("ask for a smaller max_tokens"), which name no flag of
// hone-collect's. It names --max-tokens and the value sent now, as the
// main run does, also when the value is the flag's default.
func TestScenariosMaxTokensOverCap(t *testing.T) {
	base := startServe(t) // its --max-tokens: 4096
	mcpURL := startShoutMCP(t)
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--max-tokens", "5000"}, "--max-tokens 5000 is more than the server's cap of 4096"},
		{nil, "--max-tokens 8000 is more than the server's cap of 4096"},
	} {
		out := filepath.Join(t.TempDir(), "tasks.jsonl")
		args := append([]string{"scenarios", "--mcp-url", mcpURL, "--model", "tiny", "--base-url", base, "-n", "2", "--calls", "2", "-o", out}, c.flags...)
		r := collectBin(t, args...)
		if r.code != 1 || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "lower --max-tokens") {
			t.Errorf("%q: exit %d, want 1 and %q:\n%s", c.flags, r.code, c.want, r.stderr)
		}
	}
}

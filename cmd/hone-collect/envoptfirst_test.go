package main

import (
	"strings"
	"testing"
)

// TestEnvOptCheckedBeforeModel: a misspelt --env-opt key is refused
// with the first usage error, not after --model. A run missing --model
// said only that, and the user who added it met the unknown key next.
func TestEnvOptCheckedBeforeModel(t *testing.T) {
	for _, c := range []struct{ opt, want string }{
		{"trns=3", `environment guess: unknown option "trns"; valid: n, turns`},
		{"n=x", `environment guess: option n="x" is not an integer`},
	} {
		r := collectBin(t, "--env", "guess", "--env-opt", c.opt, "--groups", "1", "-o", t.TempDir()+"/out.parquet")
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("--env-opt %s without --model: exit %d, want 2 and %q:\n%s", c.opt, r.code, c.want, r.stderr)
		}
	}
	// The options right, --model missing: that is what is refused.
	r := collectBin(t, "--env", "guess", "--env-opt", "turns=3", "--groups", "1", "-o", t.TempDir()+"/out.parquet")
	if r.code != 2 || !strings.Contains(r.stderr, "--model is required") {
		t.Errorf("no --model: exit %d, want 2 and --model is required:\n%s", r.code, r.stderr)
	}
}

package main

import (
	"strings"
	"testing"
)

// TestEnvErrorNamesEnvOnce: an environment that fails to open is named
// once. The packages behind the environments prefix their own errors
// with their name, and the run named it again ("environment tictactoe:
// tictactoe: opponent ..."), which read as two things going wrong.
func TestEnvErrorNamesEnvOnce(t *testing.T) {
	folder := t.TempDir()
	for _, c := range []struct {
		env, opt, want string
	}{
		{"tictactoe", "opponent=perfect", `environment tictactoe: opponent "perfect"`},
		{"stdio", "cmd='a", `environment stdio: --env-opt cmd: unbalanced quote`},
		{"stdio", "dir=" + folder, `environment stdio: needs --env-opt cmd=`},
		{"mcp", "url=localhost:3000/mcp", `environment mcp: url "localhost:3000/mcp"`},
		{"mcp", "cmd=" + folder, `environment mcp: start ` + folder},
		{"inbox", "db=" + folder, `environment inbox: db=` + folder + ` is a folder`},
		{"2048", "target=3", `environment 2048: option target=3`},
		{"guess", "n=0", `environment guess: option n=0`},
	} {
		r := collectBin(t, "--env", c.env, "--env-opt", c.opt, "--groups", "1", "--policy", "scripted", "-o", folder+"/out.parquet")
		if r.code != 2 || !strings.Contains(r.stderr, c.want) || strings.Contains(r.stderr, "environment "+c.env+": "+c.env) {
			t.Errorf("--env %s --env-opt %s: exit %d, want 2 and %q, the environment named once:\n%s", c.env, c.opt, r.code, c.want, r.stderr)
		}
	}
}

// TestUnknownEnvNamedOnce: an --env that names no environment is named
// once, with the environments there are. The refusal read "environment
// bogus: unknown environment "bogus" (have ...)", the name twice.
func TestUnknownEnvNamedOnce(t *testing.T) {
	r := collectBin(t, "--env", "bogus", "--groups", "1", "--policy", "scripted", "-o", t.TempDir()+"/out.parquet")
	if r.code != 2 || strings.Count(r.stderr, "bogus") != 1 || !strings.Contains(r.stderr, "environment bogus: ") || !strings.Contains(r.stderr, "guess, tictactoe") {
		t.Errorf("--env bogus: exit %d, want 2, the name once and the environments there are:\n%s", r.code, r.stderr)
	}
}

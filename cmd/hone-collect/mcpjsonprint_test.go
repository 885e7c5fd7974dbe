package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestMCPStdoutJSONPrint: an MCP stdio server that prints a line of JSON
// that is no JSON-RPC message (print(1), print(json.dumps("ready"))) on
// stdout failed the run with the SDK's decode error alone ("cannot
// unmarshal \"1\" into Go value of type jsonrpc2.wireDecode", "empty
// batch"), where a text banner gets the line quoted and "write logs to
// stderr". Such a line gets the same hint now, and so does an object with
// the version tag and neither a method nor an id ({"jsonrpc":"2.0"}),
// which got the SDK's "invalid request" alone.
func TestMCPStdoutJSONPrint(t *testing.T) {
	dir := t.TempDir()
	for i, line := range []string{`1`, `"ready"`, `true`, `[1]`, `null`, `[]`, `{"jsonrpc":"2.0"}`, `{"jsonrpc":"2.0","note":"up"}`} {
		script := filepath.Join(dir, "server"+strconv.Itoa(i)+".sh")
		// cat holds stdout open until hone-collect closes the server.
		if err := os.WriteFile(script, []byte("printf '%s\\n' '"+line+"'\nexec cat >/dev/null\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := collectBin(t, "--env", "mcp", "--env-opt", "cmd=sh "+script, "--groups", "1", "--policy", "scripted",
			"-o", filepath.Join(dir, "out.parquet"))
		want := "the server wrote " + strconv.Quote(line) + " on stdout, which carries its MCP messages only (a print? write logs to stderr)"
		if r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Errorf("server printing %s: exit %d, want 1 and %q:\n%s", line, r.code, want, r.stderr)
		}
	}
}

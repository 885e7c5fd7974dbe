// Package cmd_test checks what every Hone binary shares at its surface: how
// --help and usage errors read. The binaries' own tests cover their work.
package cmd_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/testbin"
)

var binDir string

func TestMain(m *testing.M) {
	testbin.Main(m, func(dir string) { binDir = dir },
		"./hone-collect", "./hone-score", "./hone-serve", "./hone-train", "./hone-inspect")
}

// run runs a built binary with args in an environment without the
// variables that would change what a Hone binary does, and returns its exit
// code, stdout and stderr.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, args[0]), args[1:]...)
	cmd.Dir = t.TempDir()
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, "HONE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%v: %v", args, err)
	}
	return code, out.String(), errOut.String()
}

// commands returns the subcommands a --help lists under "Commands:" (or
// cobra's "Available Commands:"), without cobra's own help and completion.
// Each must be described on its one line.
func commands(t *testing.T, help string) []string {
	t.Helper()
	var names []string
	in := false
	for _, line := range strings.Split(help, "\n") {
		switch {
		case line == "Commands:" || line == "Available Commands:":
			in = true
		case !in:
		case strings.HasPrefix(line, "   "):
			t.Errorf("a command's description goes on over a second line: %q", line)
		case strings.HasPrefix(line, "  "):
			f := strings.Fields(line)
			if len(f) < 2 {
				t.Errorf("command %q is listed without a description", line)
			}
			if f[0] != "help" && f[0] != "completion" {
				names = append(names, f[0])
			}
		default:
			in = false
		}
	}
	slices.Sort(names)
	return names
}

// misleading are default texts no --help may print: sentinels that read as
// settings (NaN, -1) and pflag's names for an empty map.
var misleading = []string{"(default NaN)", "NaN)", "(default -1)", "(default [])", "stringToString"}

// TestHelpAndUsageErrors runs every binary and subcommand: --help is the
// command's output (stdout, exit 0, with an example, nothing on stderr)
// and lists the subcommands; a bogus flag exits 2 and points, on stderr,
// to the --help of the command that was typed.
func TestHelpAndUsageErrors(t *testing.T) {
	binaries := []struct {
		name string
		subs []string // sorted
	}{
		{"hone-collect", []string{"proxy", "scenarios"}},
		{"hone-score", nil},
		{"hone-serve", nil},
		{"hone-train", []string{"grpo", "init-model", "sft"}},
		{"hone-inspect", []string{"cat", "from-jsonl", "head", "log-eval", "render", "report", "schema", "stats", "to-jsonl", "tokenize", "validate"}},
	}
	for _, b := range binaries {
		paths := [][]string{{b.name}}
		for _, s := range b.subs {
			paths = append(paths, []string{b.name, s})
		}
		for _, path := range paths {
			command := strings.Join(path, " ")
			t.Run(command, func(t *testing.T) {
				code, stdout, stderr := run(t, append(path, "--help")...)
				if code != 0 || stdout == "" || stderr != "" || !strings.Contains(stdout, "Example") {
					t.Errorf("--help: exit %d, stderr %q, stdout (want an example):\n%s", code, stderr, stdout)
				}
				for _, m := range misleading {
					if strings.Contains(stdout, m) {
						t.Errorf("--help prints %q", m)
					}
				}
				if len(path) == 1 {
					if got := commands(t, stdout); !slices.Equal(got, b.subs) {
						t.Errorf("--help lists commands %q, want %q", got, b.subs)
					}
				}
				code, stdout, stderr = run(t, append(path, "--bogus")...)
				if want := "Run '" + command + " --help'"; code != 2 || stdout != "" || !strings.Contains(stderr, want) {
					t.Errorf("--bogus: exit %d, stdout %q, stderr %q; want exit 2 and %q", code, stdout, stderr, want)
				}
			})
		}
	}
}

// TestUsageErrorsNameTheCommand covers the usage errors found after the
// flags parsed (a missing argument or flag), the unknown --env-opt key,
// and how --temperature's default reads.
func TestUsageErrorsNameTheCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"hone-inspect", "stats"}, "Run 'hone-inspect stats --help'"},
		{[]string{"hone-inspect", "nope"}, "Run 'hone-inspect --help'"},
		{[]string{"hone-inspect", "help", "nope"}, "Run 'hone-inspect --help'"},
		{[]string{"hone-train", "help", "gpro"}, "Run 'hone-train --help'"},
		{[]string{"hone-train", "init-model"}, "Run 'hone-train init-model --help'"},
		{[]string{"hone-collect", "proxy"}, "Run 'hone-collect proxy --help'"},
		{[]string{"hone-collect", "scenarios", "--mcp-url", "http://127.0.0.1:1"}, "Run 'hone-collect scenarios --help'"},
		{[]string{"hone-collect", "--env", "guess", "--env-opt", "foo=1", "--groups", "1", "--policy", "scripted", "-o", "out.parquet"},
			`environment guess: unknown option "foo"; valid: n, turns`},
	} {
		code, stdout, stderr := run(t, tc.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, tc.says) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 saying %q", tc.args, code, stdout, stderr, tc.says)
		}
	}
	_, stdout, _ := run(t, "hone-collect", "--help")
	found := false
	for _, line := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "--temperature ") {
			found = true
			if !strings.HasSuffix(line, "(default: the server's)") {
				t.Errorf("--temperature reads %q, want its default to be the server's", line)
			}
		}
	}
	if !found {
		t.Errorf("hone-collect --help lists no --temperature:\n%s", stdout)
	}
}

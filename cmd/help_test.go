// Package cmd_test checks what every Hone binary shares at its surface: how
// --help and usage errors read. The binaries' own tests cover their work.
package cmd_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// docCode returns the code of a Markdown page: each fenced block's lines
// (a line ending in a backslash joined with the next, as the shell reads
// it) and each inline `span` of the other lines, one item a piece. Prose
// is left out, so that "the --env-opt settings" is not read as a command.
func docCode(page string) []string {
	var code []string
	fenced, cont := false, ""
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced, cont = !fenced, ""
			continue
		}
		if fenced {
			if s, ok := strings.CutSuffix(line, "\\"); ok {
				cont += s + " "
				continue
			}
			code, cont = append(code, cont+line), ""
			continue
		}
		for i, part := range strings.Split(line, "`") {
			if i%2 == 1 {
				code = append(code, part)
			}
		}
	}
	return code
}

// helpFlags returns the long flags a command's --help lists.
func helpFlags(t *testing.T, path ...string) map[string]bool {
	t.Helper()
	code, stdout, stderr := run(t, append(path, "--help")...)
	if code != 0 {
		t.Fatalf("%q --help: exit %d: %s", path, code, stderr)
	}
	flags := map[string]bool{"help": true}
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9][a-z0-9-]*)`).FindAllStringSubmatch(stdout, -1) {
		flags[m[1]] = true
	}
	return flags
}

// TestDocumentedFlagsExist: every hone command the README, docs/ and
// pipelines/ pages show (in a code block or an inline code span) uses only
// flags that command has (a binary named without its subcommand, as in
// "hone-train --device cuda", any of its subcommands' flags), and every
// --env-opt they show is KEY=VALUE with a KEY some environment takes:
// README once showed "--env-opt threat-start", which hone-collect refuses
// ("must be formatted as key=value").
func TestDocumentedFlagsExist(t *testing.T) {
	subs := map[string][]string{
		"hone-collect": {"proxy", "scenarios"},
		"hone-score":   nil,
		"hone-serve":   nil,
		"hone-train":   {"grpo", "init-model", "sft"},
		"hone-inspect": {"cat", "from-jsonl", "head", "log-eval", "render", "report", "schema", "stats", "to-jsonl", "tokenize", "validate"},
	}
	flags := map[string]map[string]bool{}
	for b, ss := range subs {
		flags[b] = helpFlags(t, b)
		for _, s := range ss {
			flags[b+" "+s] = helpFlags(t, b, s)
		}
	}
	envKeys := map[string]bool{}
	valid := regexp.MustCompile(`unknown option "zz"; valid: (.*)`)
	for _, env := range []string{"guess", "tictactoe", "2048", "inbox", "stdio", "mcp"} {
		_, _, stderr := run(t, "hone-collect", "--env", env, "--env-opt", "zz=1", "--groups", "1", "--policy", "scripted", "-o", "x.parquet")
		m := valid.FindStringSubmatch(stderr)
		if m == nil {
			t.Fatalf("--env %s --env-opt zz=1 does not list the valid keys: %s", env, stderr)
		}
		for _, k := range strings.Split(strings.TrimSpace(m[1]), ", ") {
			envKeys[k] = true
		}
	}
	pages, _ := filepath.Glob("../docs/*.md")
	more, _ := filepath.Glob("../pipelines/*.md")
	readmes, _ := filepath.Glob("../pipelines/*/README.md")
	pages = append(append(append([]string{"../README.md"}, pages...), more...), readmes...)
	invocation := regexp.MustCompile(`\bhone-(collect|score|serve|train|inspect)\b([^|;&)#]*)`)
	envOpt := regexp.MustCompile(`--env-opt[ =]([^\s]+)`)
	checked := 0
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(page, "../")
		for _, code := range docCode(string(b)) {
			for _, m := range invocation.FindAllStringSubmatch(code, -1) {
				bin, args := "hone-"+m[1], strings.Fields(m[2])
				cands := []string{bin}
				if len(args) > 0 && slices.Contains(subs[bin], args[0]) {
					cands = []string{bin + " " + args[0]}
				} else {
					for _, s := range subs[bin] {
						cands = append(cands, bin+" "+s)
					}
				}
				for _, a := range args {
					f, ok := strings.CutPrefix(a, "--")
					if !ok || f == "" || !('a' <= f[0] && f[0] <= 'z') {
						continue
					}
					f, _, _ = strings.Cut(f, "=")
					checked++
					if !slices.ContainsFunc(cands, func(c string) bool { return flags[c][f] }) {
						t.Errorf("%s: %q: %s has no --%s", name, strings.TrimSpace(code), cands[0], f)
					}
				}
			}
			for _, m := range envOpt.FindAllStringSubmatch(code, -1) {
				v := m[1]
				if strings.HasPrefix(v, `"$`) || strings.HasPrefix(v, "$") {
					continue
				}
				k, _, ok := strings.Cut(v, "=")
				if !ok || !(envKeys[k] || k == strings.ToUpper(k)) {
					t.Errorf("%s: %q: --env-opt %s is not KEY=VALUE with a key an environment takes", name, strings.TrimSpace(code), v)
				}
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d documented flags checked; the scan no longer finds the pages' commands", checked)
	}
}

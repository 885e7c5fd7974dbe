package cmd_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestARTDocLoopTableFlags: docs/art.md's second table ("Not training
// options, but part of a ported loop") maps ART calls to commands of
// several binaries, and its Notes column names their flags bare
// (`--calls`, `--on-judge-error skip`), where TestDocumentedFlagsExist,
// which reads a span only after a binary's name, does not see them. Each
// flag of a row's Hone and Notes cells must be one of the command its
// Hone cell names, and a default the row states ("`--on-judge-error
// fail`, Hone's default") must be that command's.
func TestARTDocLoopTableFlags(t *testing.T) {
	b, err := os.ReadFile("../docs/art.md")
	if err != nil {
		t.Fatal(err)
	}
	command := regexp.MustCompile(`\bhone-(collect|score|serve|train|inspect)\b(?: (grpo|sft|init-model|scenarios|proxy|log-eval|report|stats))?`)
	flag := regexp.MustCompile("--([a-z0-9][a-z0-9-]*)")
	stated := regexp.MustCompile("`--([a-z0-9-]+) ([A-Za-z0-9_.-]+)`,? (?:Hone's default|the default|\\(default\\))")
	helps := map[string]string{}
	help := func(path string) string {
		if h, ok := helps[path]; ok {
			return h
		}
		code, stdout, stderr := run(t, append(strings.Fields(path), "--help")...)
		if code != 0 {
			t.Fatalf("%s --help: exit %d: %s", path, code, stderr)
		}
		helps[path] = stdout
		return stdout
	}
	rows, flags, defaults := 0, 0, 0
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "| ART | Hone | Notes |") {
			in = true
			continue
		}
		if in && !strings.HasPrefix(line, "|") {
			break
		}
		if !in || strings.HasPrefix(line, "| ---") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 5 {
			t.Fatalf("docs/art.md: table row with %d cells: %q", len(cells), line)
		}
		// A row may name two commands (collect, then log-eval): a flag
		// is right when one of them lists it.
		var paths []string
		for _, m := range command.FindAllStringSubmatch(cells[2], -1) {
			paths = append(paths, strings.TrimSpace("hone-"+m[1]+" "+m[2]))
		}
		if paths == nil {
			t.Errorf("docs/art.md: the loop table's row %q names no Hone command", cells[1])
			continue
		}
		rows++
		line := func(name string) []string {
			re := regexp.MustCompile(`(?m)^\s+(?:-\w, )?--` + regexp.QuoteMeta(name) + `\b.*$`)
			for _, p := range paths {
				if l := re.FindString(help(p)); l != "" {
					return []string{p, l}
				}
			}
			return nil
		}
		for _, f := range flag.FindAllStringSubmatch(cells[2]+cells[3], -1) {
			flags++
			if line(f[1]) == nil {
				t.Errorf("docs/art.md: the loop table's row for %s names --%s, which %q do not list in --help", strings.TrimSpace(cells[1]), f[1], paths)
			}
		}
		for _, d := range stated.FindAllStringSubmatch(cells[3], -1) {
			defaults++
			l := line(d[1])
			if l == nil {
				continue // reported above
			}
			def := regexp.MustCompile(`\(default "?([^")]*)"?\)$`).FindStringSubmatch(l[1])
			if def == nil || def[1] != d[2] {
				t.Errorf("docs/art.md says %s --%s defaults to %s; its --help says %q", l[0], d[1], d[2], l[1])
			}
		}
	}
	if rows < 6 || flags < 15 || defaults < 1 {
		t.Errorf("read %d rows, %d flags and %d stated defaults of docs/art.md's loop table: its form changed", rows, flags, defaults)
	}
}

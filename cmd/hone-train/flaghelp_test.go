package main

import (
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestFlagHelpNamesOwnFlags: a flag's help names only flags its command
// has (or another command's, written after that command's name, as in
// "grpo --init-adapter"). sft's --schedule-steps help pointed at
// --watch-dir, a grpo flag sft does not have, and at new files on
// --resume, which sft refuses; grpo's names both.
func TestFlagHelpNamesOwnFlags(t *testing.T) {
	root := newRootCmd(io.Discard, io.Discard)
	named := regexp.MustCompile(`(\b[a-z][a-z-]*\s+)?--([a-z0-9][a-z0-9-]*)`)
	commands := map[string]bool{}
	for _, c := range root.Commands() {
		commands[c.Name()] = true
	}
	for _, c := range root.Commands() {
		fs := c.Flags()
		fs.AddFlagSet(root.PersistentFlags())
		fs.VisitAll(func(f *pflag.Flag) {
			for _, m := range named.FindAllStringSubmatch(f.Usage, -1) {
				if cmd := strings.TrimSpace(m[1]); commands[cmd] && cmd != c.Name() {
					continue // another command's flag, named as such
				}
				if fs.Lookup(m[2]) == nil {
					t.Errorf("%s --%s: its help names --%s, which %s does not have: %q", c.Name(), f.Name, m[2], c.Name(), f.Usage)
				}
			}
		})
	}
	help := func(cmd, flag string) string {
		for _, c := range root.Commands() {
			if c.Name() == cmd {
				return c.Flags().Lookup(flag).Usage
			}
		}
		t.Fatalf("no command %s", cmd)
		return ""
	}
	if h := help("sft", "schedule-steps"); strings.Contains(h, "new files") {
		t.Errorf("sft --schedule-steps help speaks of new files on --resume, which sft refuses: %q", h)
	}
	if h := help("grpo", "schedule-steps"); !strings.Contains(h, "--watch-dir") || !strings.Contains(h, "new files") {
		t.Errorf("grpo --schedule-steps help does not name --watch-dir and new files: %q", h)
	}
}

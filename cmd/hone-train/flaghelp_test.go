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

// TestWarmupHelpNamesNoDecayWarning: --warmup-steps's help says what a
// cosine run whose warm-up covers the horizon gets (a warning: the rate
// never decays), as the run's log does, so that the help is where a user
// choosing the two numbers learns of it.
func TestWarmupHelpNamesNoDecayWarning(t *testing.T) {
	root := newRootCmd(io.Discard, io.Discard)
	for _, c := range root.Commands() {
		f := c.Flags().Lookup("warmup-steps")
		if f == nil {
			continue
		}
		if !strings.Contains(f.Usage, "--schedule-steps") || !strings.Contains(f.Usage, "warned") || !strings.Contains(f.Usage, "never decays") {
			t.Errorf("%s --warmup-steps help does not say a cosine warm-up covering the horizon (--schedule-steps) is warned about: %q", c.Name(), f.Usage)
		}
	}
}

package cmd_test

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDocPagesStatedDefaults: where a page about one command states a
// flag's default in prose ("`--drain-timeout` (default 60s, as
// hone-serve's)", "`--max-turns` (default 32)"), the command's --help
// gives that default. A reader plans around those numbers (how long a
// drain may take, when an episode is cut), and TestDocumentedFlagsExist
// checks only that the flag is there.
func TestDocPagesStatedDefaults(t *testing.T) {
	pages := map[string][]string{
		"../docs/proxy.md":     {"hone-collect", "proxy"},
		"../docs/stdio-env.md": {"hone-collect"},
		"../docs/mcp-env.md":   {"hone-collect"},
		"../docs/games.md":     {"hone-collect"},
	}
	// "(default 60s, as hone-serve's)" states the other binary's too.
	stated := regexp.MustCompile("`--([a-z0-9-]+)`\\s*\\(default\\s+`?([^`,;)\\s]+)`?(?:, as (hone-[a-z]+)'s)?")
	checked := 0
	for page, path := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		code, help, stderr := run(t, append(path, "--help")...)
		if code != 0 {
			t.Fatalf("%q --help: exit %d: %s", path, code, stderr)
		}
		for _, m := range stated.FindAllStringSubmatch(string(b), -1) {
			checked++
			checkDefault(t, page, strings.Join(path, " "), help, m[1], m[2])
			if m[3] != "" {
				code, other, stderr := run(t, m[3], "--help")
				if code != 0 {
					t.Fatalf("%s --help: exit %d: %s", m[3], code, stderr)
				}
				checkDefault(t, page, m[3], other, m[1], m[2])
			}
		}
	}
	if checked < 7 {
		t.Errorf("only %d stated defaults found in the pages: their form changed", checked)
	}
}

// checkDefault reports when command's --help (help) does not give flag
// the default the page states.
func checkDefault(t *testing.T, page, command, help, flag, want string) {
	t.Helper()
	l := regexp.MustCompile(`(?m)^\s+(?:-\w, )?--` + regexp.QuoteMeta(flag) + `\b.*\(default "?([^")]*)"?\)$`).FindStringSubmatch(help)
	switch {
	case l == nil:
		t.Errorf("%s says --%s defaults to %s; %s --help states no default for it", page, flag, want, command)
	case !sameDefault(want, l[1]):
		t.Errorf("%s says --%s defaults to %s; %s --help says %s", page, flag, want, command, l[1])
	}
}

// sameDefault compares a page's default with --help's as durations (60s
// and 1m0s), then as numbers, then as text.
func sameDefault(page, help string) bool {
	if a, err := time.ParseDuration(page); err == nil {
		b, err := time.ParseDuration(help)
		return err == nil && a == b
	}
	if a, err := strconv.ParseFloat(page, 64); err == nil {
		b, err := strconv.ParseFloat(help, 64)
		return err == nil && a == b
	}
	return page == help
}

package main

import (
	"strings"
	"testing"
)

// TestBareNameInTestedOnNoRowWarning: a bare name that only an in test
// of components leads to ("judeg" in components ? judeg : win) is never
// read on a row without it, yet its warning said that "where guarded
// (??, a nil or in test) it read as nil". It now says, as for a lookup
// only tested for, that the test found it on no row; a bare name a ?? or
// nil test reads is still said to read as nil, and that warning names
// no in test among the guards that read as nil. The in test of
// components["judeg"] is no second warning beside the bare name's.
func TestBareNameInTestedOnNoRowWarning(t *testing.T) {
	dir := t.TempDir()
	a := scenario(t, dir, "a.parquet", 0, 2, 2)
	out := dir + "/out.parquet"
	for _, c := range []struct {
		src  string
		nilW bool // the warning says it read as nil
	}{
		{`"judeg" in components ? judeg : win`, false},
		{`"judeg" not in components ? win : judeg`, false},
		{`"judeg" in components && judeg > 0`, false},
		{`(judeg ?? 0) + win`, true},
		{`judeg == nil ? win : judeg`, true},
		{`("judeg" in components ? judeg : 0) + (judeg ?? win)`, true},
	} {
		r := runBin(t, nil, nil, "-o", out, "--scorer", "env", "--scorer", "mix=formula:"+c.src, a)
		if r.code != 0 {
			t.Errorf("%s: exit %d, want 0:\n%s", c.src, r.code, r.stderr)
			continue
		}
		var lines []string
		for _, line := range strings.Split(r.stderr, "\n") {
			if strings.Contains(line, "on no row") {
				lines = append(lines, line)
			}
		}
		if len(lines) != 1 || !strings.Contains(lines[0], "name=judeg ") || !strings.Contains(lines[0], "level=WARN") {
			t.Errorf("%s: want one warning of judeg:\n%s", c.src, r.stderr)
			continue
		}
		if got := strings.Contains(lines[0], "read as nil"); got != c.nilW {
			t.Errorf("%s: says read as nil: %v, want %v:\n%s", c.src, got, c.nilW, lines[0])
		}
		if !c.nilW && !strings.Contains(lines[0], "test found it on no row") {
			t.Errorf("%s: does not say the test found it on no row:\n%s", c.src, lines[0])
		}
		if c.nilW && strings.Contains(lines[0], "in test") {
			t.Errorf("%s: names an in test among the guards that read it as nil:\n%s", c.src, lines[0])
		}
	}
}

package main

import (
	"strings"
	"testing"
)

// TestInTestedNameOnNoRowWarns: a misspelt name that the formula only
// tests for ("judeg" in metrics ? 1 : 0) made the test false on every
// row without a word, where (judeg ?? 0) warned. It now warns too, with
// the closest name, and says the test found it on no row rather than
// that it "read as nil" (it is never read). A test against a list of
// names, not the rows' maps, is no read of the rows and is not watched.
func TestInTestedNameOnNoRowWarns(t *testing.T) {
	dir := t.TempDir()
	a := scenario(t, dir, "a.parquet", 0, 2, 2)
	out := dir + "/out.parquet"
	for _, c := range []struct {
		src  string
		warn string // the name warned of, "" for none
		nilW bool   // the warning says it read as nil
	}{
		{`"judeg" in metrics ? 1 : 0`, `metrics[\"judeg\"]`, false},
		{`"judeg" not in keys(metrics) ? 0 : 1`, `metrics[\"judeg\"]`, false},
		{`"envv" in components ? 1 : win`, `components[\"envv\"]`, false},
		{`"judeg" in ["judge", "win"] ? 1 : 0`, "", false},
		{`"win" in metrics ? 1 : 0`, "", false},
		{`"judeg" in metrics ? metrics["judeg"] : win`, `metrics[\"judeg\"]`, false},
		{`(metrics["judeg"] ?? 0) + win`, `metrics[\"judeg\"]`, true},
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
		if c.warn == "" {
			if len(lines) > 0 {
				t.Errorf("%s: warned:\n%s", c.src, r.stderr)
			}
			continue
		}
		if len(lines) != 1 || !strings.Contains(lines[0], `name="`+c.warn+`"`) || !strings.Contains(lines[0], "level=WARN") {
			t.Errorf("%s: want one warning of %s:\n%s", c.src, c.warn, r.stderr)
			continue
		}
		if strings.Contains(lines[0], "read as nil") != c.nilW {
			t.Errorf("%s: says read as nil: %v, want %v:\n%s", c.src, !c.nilW, c.nilW, lines[0])
		}
		if !c.nilW && !strings.Contains(lines[0], "test found it on no row") {
			t.Errorf("%s: does not say the test found it on no row:\n%s", c.src, lines[0])
		}
	}
}

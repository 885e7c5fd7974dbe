package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseFlags(t *testing.T) {
	cases := []struct {
		args      []string
		help      bool
		usageErr  bool
		wantPrint bool
	}{
		{[]string{"--n", "3"}, false, false, false},
		{[]string{"--help"}, true, false, true},
		{[]string{"--nope"}, false, true, false},
		{[]string{"--n", "x"}, false, true, false},
	}
	for _, c := range cases {
		var stdout bytes.Buffer
		fs := NewFlagSet("tool sub", "tool does things\n\nFlags:\n", &stdout)
		n := fs.Int("n", 1, "how many")
		help, err := ParseFlags(fs, c.args)
		if help != c.help || (err != nil) != c.usageErr || (err != nil && !IsUsage(err)) {
			t.Errorf("%q: help=%v err=%v", c.args, help, err)
		}
		if printed := strings.Contains(stdout.String(), "tool does things"); printed != c.wantPrint {
			t.Errorf("%q: usage printed=%v, want %v (%q)", c.args, printed, c.wantPrint, stdout.String())
		}
		if err != nil && helpCommand(err, "tool") != "tool sub" {
			t.Errorf("%q: the usage error points to %q's help, want the flag set's command", c.args, helpCommand(err, "tool"))
		}
		if c.args[0] == "--n" && !c.usageErr && *n != 3 {
			t.Errorf("--n 3 parsed as %d", *n)
		}
	}
}

package main

import (
	"strings"
	"testing"
)

// TestIgnoredFlagsWarned runs hone-train as a process with flags the call
// does not read: --rank, --alpha, --rslora or --targets with
// --init-adapter (whose adapter has its own shape), and --publish-every
// with a local --out (nothing is published). Each trains and warns once,
// naming the flag and why it does nothing; the same call without them
// warns about none. Before, all were ignored without a word: a user who
// asked for --rank 16 on top of a rank-2 --init-adapter trained rank 2.
func TestIgnoredFlagsWarned(t *testing.T) {
	md, in, out, init := warmAdapter(t)
	for i, tc := range []struct {
		extra []string
		want  []string // a warning line containing each; none: no "does nothing" warning
	}{
		{[]string{"--init-adapter", init, "--rank", "16", "--alpha", "32"}, []string{"--rank", "--alpha", "--init-adapter"}},
		{[]string{"--init-adapter", init, "--rslora", "--targets", "q_proj"}, []string{"--rslora", "--targets"}},
		{[]string{"--publish-every", "5s"}, []string{"--publish-every", "--out"}},
		{[]string{"--init-adapter", init}, nil},
	} {
		for _, job := range []string{"grpo", "sft"} {
			args := append([]string{job, "--model", md, "--run", job + string(rune('a'+i)), "--out", out, "--threads", "1", "--steps", "1"}, tc.extra...)
			code, text := runMain(t, append(args, in)...)
			if code != 0 {
				t.Fatalf("%s %v: exit %d\n%s", job, tc.extra, code, text)
			}
			w := warnLines(text, "does nothing")
			if tc.want == nil {
				if len(w) != 0 {
					t.Errorf("%s %v: warned %q, want none", job, tc.extra, w)
				}
				continue
			}
			if len(w) != 1 {
				t.Errorf("%s %v: warnings %q, want one\n%s", job, tc.extra, w, text)
				continue
			}
			for _, s := range tc.want {
				if !strings.Contains(w[0], s) {
					t.Errorf("%s %v: warning %q does not name %s", job, tc.extra, w[0], s)
				}
			}
		}
	}
}

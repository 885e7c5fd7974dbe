package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestUsageErrorBeforeJudgeFlagsWarning: judge flags given without a
// ruler scorer were warned about before the command's usage was checked,
// so a bad command printed a warning about flags that do nothing and then
// its usage error, which is what to fix. The usage error comes alone.
func TestUsageErrorBeforeJudgeFlagsWarning(t *testing.T) {
	dir := t.TempDir()
	in := scenario(t, dir, "in.parquet", 0, 1, 2)
	out := filepath.Join(dir, "out.parquet")
	for _, c := range []struct {
		name, want string
		args       []string
	}{
		{"bad flag value", "--concurrency 0", []string{"-o", out, "--concurrency", "0", in}},
		{"shard in place", "--shard", []string{"-o", in, "--shard", "0/2", in}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runBin(t, nil, nil, append([]string{"--judge-model", "m", "--scorer", "env"}, c.args...)...)
			if r.code != 2 || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("exit %d, want 2 naming %s:\n%s", r.code, c.want, r.stderr)
			}
			if strings.Contains(r.stderr, "do nothing without a ruler scorer") {
				t.Errorf("a usage error came with a warning about the judge flags:\n%s", r.stderr)
			}
		})
	}
	// A good command still warns.
	if r := runBin(t, nil, nil, "--judge-model", "m", "--scorer", "env", "-o", out, in); r.code != 0 || !strings.Contains(r.stderr, "do nothing without a ruler scorer") {
		t.Errorf("exit %d, want 0 and the warning:\n%s", r.code, r.stderr)
	}
}

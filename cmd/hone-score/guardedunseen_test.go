package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// TestGuardedNameOnNoRowWarns: a name read under a guard is nil where a
// row lacks it, so a misspelt one ((judeg ?? 0) + win) read the fallback
// on every row of every file without a word, where an unguarded read
// fails with "no metric named judeg". A name the formula reads that no
// row it scored had is now one warning per name, naming the scorer, the
// name, the rows and the closest name the rows had; a name present on
// some rows is not.
func TestGuardedNameOnNoRowWarns(t *testing.T) {
	dir := t.TempDir()
	a := scenario(t, dir, "a.parquet", 0, 2, 2)
	gs := readBack(t, scenario(t, dir, "tmp.parquet", 2, 1, 2))
	gs[0].Trajectories[1].Metrics["judge"] = 0.5 // on one row of one file only
	b := filepath.Join(dir, "b.parquet")
	if err := trajectory.WriteFile(context.Background(), b, gs, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.parquet")
	for _, c := range []struct {
		src   string
		warns map[string]string // name warned of: the closest name the rows had
	}{
		{`(judeg ?? 0) + win`, map[string]string{"judeg": "judge"}},
		{`judeg != nil ? judeg : win`, map[string]string{"judeg": "judge"}},
		{`(metrics["typo"] ?? 0) + win`, map[string]string{`metrics[\"typo\"]`: ""}},
		{`(metrics["judeg"] ?? 0) + (components["envv"] ?? 0)`, map[string]string{`metrics[\"judeg\"]`: "judge", `components[\"envv\"]`: "env"}},
		{`"judeg" in metrics ? metrics["judeg"] : win`, map[string]string{`metrics[\"judeg\"]`: "judge"}},
		{`(judge ?? 0) + win`, nil},
		{`metadata["env"] == "nope" ? metrics["won"] : win`, nil}, // a branch no file takes
		{`(metrics["judge"] ?? 0) + (env ?? 0)`, nil},
	} {
		r := runBin(t, nil, nil, "-o", out, "--concurrency", "2", "--scorer", "env", "--scorer", "mix=formula:"+c.src, a, b)
		if r.code != 0 {
			t.Errorf("%s: exit %d, want 0:\n%s", c.src, r.code, r.stderr)
			continue
		}
		got := map[string]int{}
		for _, line := range strings.Split(r.stderr, "\n") {
			if !strings.Contains(line, "on no row") {
				continue
			}
			named := ""
			for n := range c.warns {
				if strings.Contains(line, "name="+n+" ") || strings.Contains(line, `name="`+n+`"`) {
					named = n
				}
			}
			if named == "" {
				t.Errorf("%s: warned of a name it should not:\n%s", c.src, line)
				continue
			}
			got[named]++
			for _, want := range []string{"level=WARN", "scorer=mix", "rows=6"} {
				if !strings.Contains(line, want) {
					t.Errorf("%s: warning lacks %s:\n%s", c.src, want, line)
				}
			}
			if h := c.warns[named]; h != "" && !strings.Contains(line, "closest="+h+" ") {
				t.Errorf("%s: warning does not point at %s:\n%s", c.src, h, line)
			}
		}
		for n := range c.warns {
			if got[n] != 1 {
				t.Errorf("%s: %d warnings of %s, want 1:\n%s", c.src, got[n], n, r.stderr)
			}
		}
	}
	// No row scored (every episode failed, so passed through): nothing
	// was read, and nothing is said.
	for i := range gs[0].Trajectories {
		gs[0].Trajectories[i].Error = "env crashed"
	}
	failed := filepath.Join(dir, "failed.parquet")
	if err := trajectory.WriteFile(context.Background(), failed, gs, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	r := runBin(t, nil, nil, "-o", out, "--scorer", "formula:(judeg ?? 0) + win", failed)
	if r.code != 0 || strings.Contains(r.stderr, "on no row") {
		t.Fatalf("no row scored: exit %d, want 0 and no warning:\n%s", r.code, r.stderr)
	}
}

package score_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/score/judge/judgetest"
)

// A formula reads the components of the scorers before it in the chain.
// One that reads a component a later scorer (or itself) writes failed on
// a first scoring, the name being absent, but on a file scored before it
// read the earlier run's value without a word, while the later scorer
// wrote a new one beside it: a "final" computed from a stale judge score.
// Both are refused as a usage error naming the two scorers, before any
// judge call.
func TestFormulaReadsOnlyEarlierComponents(t *testing.T) {
	srv := judgetest.NewServer(t, judgetest.KeywordJudge("WIN"))
	opts := rulerOpts(t, srv) // ruler, then final=formula:0.5*ruler + 0.5*env
	out1, _, _, err := run(t, opts, writeInput(t, "in.parquet", groups(2, 3)))
	if err != nil {
		t.Fatal(err)
	}
	scored := filepath.Join(t.TempDir(), "scored.parquet")
	if err := os.WriteFile(scored, out1, 0o644); err != nil {
		t.Fatal(err)
	}
	hits := srv.Hits()
	for name, c := range map[string]struct {
		scorers []string
		want    string
	}{
		"later scorer": {[]string{"final=formula:0.5*ruler + 0.5*env", "ruler"},
			`--scorer "final=formula:0.5*ruler + 0.5*env" reads component "ruler", which --scorer "ruler" writes after it`},
		"later scorer, looked up": {[]string{"final=formula:components[\"ruler\"] ?? 0", "ruler"},
			`reads component "ruler", which --scorer "ruler" writes after it`},
		"itself": {[]string{"ruler", "final=formula:final + ruler"},
			`--scorer "final=formula:final + ruler" reads component "final", which it writes itself`},
		"itself, a metric's name": {[]string{"win=formula:win * 2"},
			`reads component "win", which it writes itself: on rows scored before it would read its own value from the earlier run (a metric of that name is metrics["win"])`},
		// The chain writes previous after every scorer, when the reward
		// changed: absent on a row scored once, so the formula failed
		// after the judge was paid; on one re-scored, an earlier run's.
		"previous": {[]string{"ruler", "final=formula:0.5*ruler + 0.5*previous"},
			`--scorer "final=formula:0.5*ruler + 0.5*previous" reads component "previous", which the chain writes after every scorer`},
	} {
		t.Run(name, func(t *testing.T) {
			o := opts
			o.Scorers = c.scorers
			_, _, _, err := run(t, o, scored)
			if !errors.Is(err, stageerr.ErrUsage) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want a usage error containing %q", err, c.want)
			}
			if srv.Hits() != hits {
				t.Fatalf("%d judge calls before the usage error", srv.Hits()-hits)
			}
		})
	}
	// Reading env, which is there before any scorer runs, or a metric by
	// lookup, is fine wherever the formula stands, also a metric named
	// like the formula's own component.
	o := opts
	o.Scorers = []string{"final=formula:0.5*env + 0.5*(metrics[\"win\"] ?? 0)", "env", "win=formula:metrics[\"win\"] * 2"}
	if _, _, _, err := run(t, o, scored); err != nil {
		t.Fatalf("formula over env before the env scorer, or over a metric by lookup: %v", err)
	}
}

package main

import (
	"strings"
	"testing"
)

// TestUnseenNameNotWarnedWhenRunFails: a formula that fails a row (an
// unguarded metrics["nope"] on a row without it) ends the run with an
// error naming the row and the fix; the warning that a guarded name
// (judeg ?? 0) was on no row "it scored", of the one row scored before,
// came first and led the reader to the wrong name. A failed run now says
// only its error; a run that completes still warns.
func TestUnseenNameNotWarnedWhenRunFails(t *testing.T) {
	dir := t.TempDir()
	a := scenario(t, dir, "a.parquet", 0, 3, 2)
	out := dir + "/out.parquet"
	r := runBin(t, nil, nil, "-o", out, "--concurrency", "1", "--scorer", `formula:(judeg ?? 0) + (metrics["illegal"] > 0 ? metrics["nope"] : 1)`, a)
	if r.code == 0 || !strings.Contains(r.stderr, `no metric named "nope"`) {
		t.Fatalf("exit %d, want a failure naming the missing metric:\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "on no row") {
		t.Errorf("a failed run warned of an unseen name beside its error:\n%s", r.stderr)
	}
	r = runBin(t, nil, nil, "-o", out, "--scorer", `formula:(judeg ?? 0) + (metrics["nope"] ?? 1)`, a)
	if r.code != 0 || strings.Count(r.stderr, "on no row") != 2 {
		t.Errorf("exit %d, want 0 and a warning of judeg and of nope:\n%s", r.code, r.stderr)
	}
}

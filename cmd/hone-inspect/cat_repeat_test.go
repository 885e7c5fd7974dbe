package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A file named twice is read once, at its first place (as every command
// reads its inputs), so cat's output stays valid: a second copy would
// repeat every trajectory id. cat says so on stderr rather than drop the
// copy without a word, naming the repeat as it was spelled, and counts one
// file in the singular.
func TestCatWarnsOfAFileNamedTwice(t *testing.T) {
	dir, _, _ := fixtures(t)
	a := filepath.Join(dir, "a.parquet")
	again := dir + "/./a.parquet"
	r := mustRun(t, nil, "cat", a, again)
	sameGroups(t, "cat a a", readBytes(t, []byte(r.stdout)), readAll(t, a))
	if !strings.Contains(r.stderr, again) || !strings.Contains(r.stderr, "read once") {
		t.Errorf("stderr does not name the repeat %s: %q", again, r.stderr)
	}
	if !strings.Contains(r.stderr, "1 file → 2 groups") {
		t.Errorf("cat summary: %q", r.stderr)
	}
	// A folder and a file in it: the file comes once, from the folder.
	r = mustRun(t, nil, "cat", dir, a)
	if !strings.Contains(r.stderr, a+": ") || !strings.Contains(r.stderr, "2 files → 3 groups") {
		t.Errorf("cat DIR DIR/a.parquet: stderr %q", r.stderr)
	}
	// Without a repeat, no warning.
	if r = mustRun(t, nil, "cat", a); strings.Contains(r.stderr, "read once") {
		t.Errorf("cat a warned: %q", r.stderr)
	}
}

// stats, validate, to-jsonl, head, schema and from-jsonl read a repeated file once too: their counts
// would otherwise look like the file's own. Each says so on stderr, as cat.
func TestEveryPassWarnsOfAFileNamedTwice(t *testing.T) {
	dir, _, _ := fixtures(t)
	a := filepath.Join(dir, "a.parquet")
	again := dir + "/./a.parquet"
	for _, cmd := range []string{"stats", "validate", "to-jsonl", "head", "schema"} {
		r := mustRun(t, nil, cmd, a, again)
		if want := "hone-inspect " + cmd + ": " + again + ": named again, read once"; !strings.Contains(r.stderr, want) {
			t.Errorf("%s a a: stderr %q lacks %q", cmd, r.stderr, want)
		}
		if r = mustRun(t, nil, cmd, a); strings.Contains(r.stderr, "read once") {
			t.Errorf("%s a warned: %q", cmd, r.stderr)
		}
	}
	jsonl := filepath.Join(dir, "a.jsonl")
	mustRun(t, nil, "to-jsonl", "-o", jsonl, a)
	r := mustRun(t, nil, "from-jsonl", "-o", filepath.Join(dir, "back.parquet"), jsonl, dir+"/./a.jsonl")
	if want := "hone-inspect from-jsonl: " + dir + "/./a.jsonl: named again, read once"; !strings.Contains(r.stderr, want) {
		t.Errorf("from-jsonl a a: stderr %q lacks %q", r.stderr, want)
	}
}

// log-eval reads a repeated file once as well, so the step's eval metrics
// are the file's own, not doubled; it said nothing of the repeat, as the
// other commands that count now do.
func TestLogEvalWarnsOfAFileNamedTwice(t *testing.T) {
	rl := evalRun(t, 3)
	dir := t.TempDir()
	p1 := filepath.Join(dir, "s1.parquet")
	evalFile(t, p1, "rl@1", f(1))
	again := dir + "/./s1.parquet"
	r := mustRun(t, nil, "log-eval", "--run", rl.Dir, p1, again)
	if want := "hone-inspect log-eval: " + again + ": named again, read once"; !strings.Contains(r.stderr, want) {
		t.Errorf("log-eval a a: stderr %q lacks %q", r.stderr, want)
	}
}

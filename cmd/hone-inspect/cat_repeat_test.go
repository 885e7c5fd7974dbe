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

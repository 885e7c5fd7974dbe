package grpojob

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/train/checkpoint"
)

// TestWatchWarnsOfGroupsAgain: a --watch-dir call whose new files hold
// groups a file the run consumed already trained (a file re-scored, or
// the proxy's file and a hone-score output made from it landing in the
// same folder) trains them, as a named-file session does, but says so
// once, naming how many, the first ids, the new file and the consumed one.
// Watch calls recorded no groups, so the second copy was trained again
// without a word; each consumed file records its groups now. (A run
// cannot mix the two modes: a resume that gives files to a --watch-dir
// run, or the reverse, is refused as a changed option.)
func TestWatchWarnsOfGroupsAgain(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	watch := filepath.Join(dir, "incoming")
	if err := os.Mkdir(watch, 0o755); err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(watch, "a.parquet")
	writeGroups(t, md, first, 2, 3, varied)
	o := baseOptions(md, dir, "r")
	o.WatchDir = watch
	if warn, text := runLastWarn(t, o, "call 1", "trained again"); warn != "" {
		t.Fatalf("the first call warned %q\n%s", warn, text)
	}
	man, err := (&checkpoint.Run{Dir: filepath.Join(dir, "r")}).ReadManifest()
	if err != nil || len(man.Consumed) != 1 || man.Consumed[0].Groups == "" {
		t.Fatalf("manifest %+v (%v): want a.parquet consumed with its groups", man, err)
	}
	// New groups: no warning.
	writeGroups(t, md, filepath.Join(watch, "b.parquet"), 2, 3, varied)
	if warn, text := runLastWarn(t, o, "call 2", "trained again"); warn != "" {
		t.Errorf("a call of new groups warned %q\n%s", warn, text)
	}
	// a.parquet's groups again, in other bytes under another folder
	// name, the base name (so the ids) kept.
	sub := filepath.Join(dir, "rescored")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(sub, "a.parquet")
	writeGroups(t, md, again, 2, 3, squares)
	if err := os.Rename(again, filepath.Join(watch, "a-rescored.parquet")); err != nil {
		t.Fatal(err)
	}
	warn, text := runLastWarn(t, o, "call 3", "groups the run already trained")
	for _, want := range []string{"groups=2", "a.parquet-g0", "a.parquet-g1", "a-rescored.parquet", first + " (consumed at step 1)"} {
		if !strings.Contains(warn, want) {
			t.Errorf("call 3 (a's groups again in another file) warned %q; want it to name %q\n%s", warn, want, text)
		}
	}
	if strings.Count(text, "groups the run already trained") != 1 {
		t.Errorf("want one warning:\n%s", text)
	}
}

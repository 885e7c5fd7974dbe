package grpojob

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/train/checkpoint"
)

// TestResumeWithTrainedGroupsWarns: a session whose files differ from an
// earlier session's (a file re-scored, or the proxy's file after training
// a hone-score output made from it) but hold the same groups trains them
// again, as asked, but says so once, naming how many groups, the first ids
// and the file they are in. It used to match files by sha256 alone and
// said nothing.
func TestResumeWithTrainedGroupsWarns(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	for _, d := range []string{"scored", "proxy", "new"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The same base name, so the same group ids; other rewards, so
	// other bytes.
	scored, proxy := filepath.Join(dir, "scored", "a.parquet"), filepath.Join(dir, "proxy", "a.parquet")
	fresh := filepath.Join(dir, "new", "b.parquet")
	writeGroups(t, md, scored, 2, 3, varied)
	writeGroups(t, md, proxy, 2, 3, squares)
	writeGroups(t, md, fresh, 2, 3, squares)
	out := filepath.Join(dir, "adapters")
	o := baseOptions(md, out, "r", scored)
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	o.Resume = true
	o.Inputs = baseOptions(md, out, "r", fresh).Inputs
	if warn, text := runLastWarn(t, o, "round 2", "trained again"); warn != "" {
		t.Errorf("a session of new groups warned %q\n%s", warn, text)
	}
	o.Inputs = baseOptions(md, out, "r", proxy).Inputs
	warn, text := runLastWarn(t, o, "round 3", "groups the run already trained")
	for _, want := range []string{"groups=2", "a.parquet-g0", "a.parquet-g1", proxy, "trained_in_sessions=[0]"} {
		if !strings.Contains(warn, want) {
			t.Errorf("round 3 (a's groups again in another file) warned %q; want it to name %q\n%s", warn, want, text)
		}
	}
	if strings.Count(text, "groups the run already trained") != 1 {
		t.Errorf("want one warning:\n%s", text)
	}
	// The very file again is warned of by name; its groups are not named
	// a second time.
	o.Inputs = baseOptions(md, out, "r", scored).Inputs
	warn, text = runLastWarn(t, o, "round 4", "trained again")
	if !strings.Contains(warn, scored+" (trained in session 0") || strings.Contains(text, "groups the run already trained") {
		t.Errorf("round 4 (a file trained before) warned %q; want the file named, its groups not\n%s", warn, text)
	}
}

// TestGroupsAgainOldManifest: a run recorded before the sessions' groups
// were kept is read as before, its groups not checked, and a step's state
// never holds the groups (what a resume reads stays as it was).
func TestGroupsAgainOldManifest(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	if err := os.Mkdir(filepath.Join(dir, "proxy"), 0o755); err != nil {
		t.Fatal(err)
	}
	scored, proxy := filepath.Join(dir, "a.parquet"), filepath.Join(dir, "proxy", "a.parquet")
	writeGroups(t, md, scored, 2, 3, varied)
	writeGroups(t, md, proxy, 2, 3, squares)
	out := filepath.Join(dir, "adapters")
	o := baseOptions(md, out, "r", scored)
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	run := &checkpoint.Run{Dir: filepath.Join(out, "r")}
	st, err := run.ReadState(1)
	if err != nil || len(st.Extra) == 0 || strings.Contains(string(st.Extra), "groups") {
		t.Fatalf("step 1's state extra %s (%v): want the session without its groups", st.Extra, err)
	}
	man, err := run.ReadManifest()
	if err != nil || len(man.Sessions) != 1 || man.Sessions[0].Groups == "" {
		t.Fatalf("manifest sessions %+v (%v): want session 0 with its groups", man.Sessions, err)
	}
	man.Sessions[0].Groups = "" // as a run recorded before them
	if err := run.WriteManifest(man); err != nil {
		t.Fatal(err)
	}
	o.Resume = true
	o.Inputs = baseOptions(md, out, "r", proxy).Inputs
	if warn, text := runLastWarn(t, o, "round 2", "trained again"); warn != "" {
		t.Errorf("a run without recorded groups warned %q\n%s", warn, text)
	}
}

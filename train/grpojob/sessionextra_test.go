package grpojob

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/train/checkpoint"
)

// TestBadSessionExtraNamesItsPath: a trainer_state.json whose "extra" is
// not a session (edited by hand, cut short) is refused on --resume with
// the file's path, so the user knows which step's file to mend. The
// error named "trainer_state.json of step 1" alone, which every step
// folder of every run holds.
func TestBadSessionExtraNamesItsPath(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	a := filepath.Join(dir, "a.parquet")
	writeGroups(t, md, a, 2, 3, varied)
	out := filepath.Join(dir, "adapters")
	o := baseOptions(md, out, "r", a)
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	run := &checkpoint.Run{Dir: filepath.Join(out, "r")}
	p := filepath.Join(run.StepDir(1), checkpoint.StateName)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	st["extra"] = "not a session"
	if b, err = json.Marshal(st); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	o.Resume = true
	err = runWith(context.Background(), backend(t), o, textLog(&log))
	if err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("resume on a bad extra: %v; want an error naming %s", err, p)
	}
}

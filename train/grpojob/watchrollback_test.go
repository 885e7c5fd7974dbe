package grpojob

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/train/checkpoint"
)

// TestWatchRollbackWarnsOfConsumedFiles: latest moved back past the end of
// a consumed watch session leaves its files consumed, and the next call
// says so, naming them and the way to train them again (their entries
// removed from manifest.json), which then works. The call said "nothing
// new" and nothing else: the rollback dropped their data without a word.
func TestWatchRollbackWarnsOfConsumedFiles(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	watch := watchFolder(t, dir, md)
	o := baseOptions(md, dir, "cron")
	o.WatchDir, o.GroupsPerStep, o.Steps = watch, 1, 2
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	run := &checkpoint.Run{Dir: filepath.Join(dir, "cron")}
	if err := runfolder.WritePointer(run.Dir, runfolder.LatestName, 1); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("the call after latest moved back: %v\n%s", err, log.String())
	}
	for _, want := range []string{"level=WARN", "round1.parquet", "consumed at step 2", "stay consumed", checkpoint.ManifestName, "nothing new"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the call after latest moved back does not say %q:\n%s", want, log.String())
		}
	}
	man, err := run.ReadManifest()
	if err != nil {
		t.Fatal(err)
	}
	man.Consumed = nil // what the warning says to do
	if err := run.WriteManifest(man); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("the call after the entries were removed: %v\n%s", err, log.String())
	}
	if last, _, err := run.Latest(); err != nil || last != 3 {
		t.Errorf("latest %d (%v), want 3: round1.parquet trained again from step 1\n%s", last, err, log.String())
	}
	if strings.Contains(log.String(), "stay consumed") {
		t.Errorf("warned again after the entries were removed:\n%s", log.String())
	}
}

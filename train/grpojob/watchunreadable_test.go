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

// TestWatchPendingFileUnreadable: an unfinished watch session whose file
// can no longer be read at its recorded path for a reason other than new
// contents (here a folder now stands in its place) fails naming the path
// and the reader's own error. The error said only that neither the path
// nor the folder held the file's sha256, which sent the user looking for
// a changed file rather than at what stopped the read.
func TestWatchPendingFileUnreadable(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	watch := watchFolder(t, dir, md)
	o := baseOptions(md, dir, "cron")
	o.WatchDir, o.GroupsPerStep, o.Steps = watch, 1, 2
	var log bytes.Buffer
	stopAfterFirstStep(t, o, &log)
	run := &checkpoint.Run{Dir: filepath.Join(dir, "cron")}
	if man, err := run.ReadManifest(); err != nil || man.Pending == nil {
		t.Fatalf("after the stop: manifest %+v, %v; want a pending session", man, err)
	}
	f := filepath.Join(watch, "round1.parquet")
	if err := os.Remove(f); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(f, 0o755); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	err := runWith(context.Background(), backend(t), o, textLog(&log))
	if err == nil {
		t.Fatalf("the next call succeeded with the session's file unreadable\n%s", log.String())
	}
	for _, want := range []string{f, "is a directory"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

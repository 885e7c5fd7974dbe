package grpojob

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWatchDirSpelledAnotherWay: a watch folder named another way on a
// later call (a trailing slash, relative where cron gave it absolute, a
// folder moved) goes on with the run: its files are known by sha256, so
// nothing is trained twice. It was refused with "option watch_dir
// differs", which stopped a cron job after one call by hand.
func TestWatchDirSpelledAnotherWay(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	watch := watchFolder(t, dir, md)
	o := baseOptions(md, dir, "cron")
	o.WatchDir, o.GroupsPerStep = watch+string(filepath.Separator), 0
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	t.Chdir(dir)
	o.WatchDir = "incoming"
	log.Reset()
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("second call, the folder named relative: %v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "nothing new") {
		t.Errorf("second call trained again:\n%s", log.String())
	}
	writeGroups(t, md, filepath.Join(watch, "round2.parquet"), 2, 3, varied)
	log.Reset()
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("third call: %v\n%s", err, log.String())
	}
	if rows := readMetrics(t, filepath.Join(dir, "cron")); len(rows) < 2 {
		t.Errorf("round2 was not trained: %d metric rows\n%s", len(rows), log.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "cron", "manifest.json")); err != nil {
		t.Fatal(err)
	}
}

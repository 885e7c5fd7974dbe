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

// TestWatchLeavesAFileBeingWrittenForLater: a scored file written in
// place (not under a temporary name renamed when whole) is seen by a call
// before its footer is written. The call trains the folder's whole files,
// warns naming the unfinished one and leaves it unconsumed; once written,
// the next call trains it. The call failed as bad input (exit 2), and
// trained nothing, on every call that ran while a file was being written.
func TestWatchLeavesAFileBeingWrittenForLater(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	watch := watchFolder(t, dir, md)
	whole := filepath.Join(dir, "round2.parquet")
	writeGroups(t, md, whole, 2, 3, varied)
	b, err := os.ReadFile(whole)
	if err != nil {
		t.Fatal(err)
	}
	growing := filepath.Join(watch, "round2.parquet")
	o := baseOptions(md, dir, "cron")
	o.WatchDir, o.GroupsPerStep = watch, 0
	run := &checkpoint.Run{Dir: filepath.Join(dir, "cron")}
	// An empty file (just created) and one cut before its footer.
	for i, part := range [][]byte{nil, b[:len(b)/2]} {
		if err := os.WriteFile(growing, part, 0o644); err != nil {
			t.Fatal(err)
		}
		var log bytes.Buffer
		if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
			t.Fatalf("call %d, round2.parquet %d bytes of %d: %v\n%s", i+1, len(part), len(b), err, log.String())
		}
		if !strings.Contains(log.String(), "round2.parquet") || !strings.Contains(log.String(), "not a whole Parquet file yet") {
			t.Errorf("call %d: no warning naming round2.parquet:\n%s", i+1, log.String())
		}
		man, err := run.ReadManifest()
		if err != nil || len(man.Consumed) != 1 || filepath.Base(man.Consumed[0].Path) != "round1.parquet" {
			t.Fatalf("call %d: manifest %+v, %v; want round1.parquet alone consumed", i+1, man, err)
		}
	}
	if err := os.WriteFile(growing, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("the call after round2.parquet was written: %v\n%s", err, log.String())
	}
	man, err := run.ReadManifest()
	if err != nil || len(man.Consumed) != 2 || filepath.Base(man.Consumed[1].Path) != "round2.parquet" {
		t.Fatalf("manifest %+v, %v; want round2.parquet consumed once whole", man, err)
	}
	if last, _, err := run.Latest(); err != nil || last != 2 {
		t.Errorf("latest %d (%v), want 2: one step per whole file", last, err)
	}
}

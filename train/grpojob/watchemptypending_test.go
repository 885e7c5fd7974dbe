package grpojob

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/train/checkpoint"
)

// TestWatchPendingSessionWithoutFiles: a manifest.json edited by hand so
// that its pending session lists no files is refused naming the manifest
// and the session, and saying how to go on. The call failed with
// "trajectory: no input files", which named neither, though no input was
// given to a --watch-dir call.
func TestWatchPendingSessionWithoutFiles(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	watch := watchFolder(t, dir, md)
	o := baseOptions(md, dir, "cron")
	o.WatchDir, o.GroupsPerStep = watch, 0
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	run := &checkpoint.Run{Dir: filepath.Join(dir, "cron")}
	man, err := run.ReadManifest()
	if err != nil {
		t.Fatal(err)
	}
	man.Pending = &checkpoint.Session{StartStep: 1, EndStep: 2, Files: []checkpoint.FileEntry{}}
	if err := run.WriteManifest(man); err != nil {
		t.Fatal(err)
	}
	err = runWith(context.Background(), backend(t), o, textLog(&log))
	manifest := filepath.Join(run.Dir, checkpoint.ManifestName)
	if !errors.Is(err, stageerr.ErrBadInput) || !strings.Contains(err.Error(), manifest) || !strings.Contains(err.Error(), "pending") || !strings.Contains(err.Error(), "step 1") {
		t.Fatalf("a pending session without files: %v; want a bad-input error naming %s, its pending session and its first step", err, manifest)
	}
}

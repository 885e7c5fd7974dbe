package grpojob

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/train/checkpoint"
)

// cancelAfterStep is a log handler that cancels a context when the
// training loop logs its first step: the run stops before its next step,
// as a kill between two steps leaves it.
type cancelAfterStep struct {
	slog.Handler
	cancel context.CancelFunc
}

func (h cancelAfterStep) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "step" {
		h.cancel()
	}
	return h.Handler.Handle(ctx, r)
}

// stopAfterFirstStep runs a call with o stopped after its first step (as
// a kill between two steps would stop it), its log in log, and fails the
// test unless the call ended on the stop.
func stopAfterFirstStep(t *testing.T, o Options, log *bytes.Buffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := slog.New(cancelAfterStep{Handler: slog.NewTextHandler(log, nil), cancel: cancel})
	if err := runWith(ctx, backend(t), o, stop); !errors.Is(err, context.Canceled) {
		t.Fatalf("the stopped call: %v, want context.Canceled\n%s", err, log.String())
	}
}

// TestWatchPendingSessionFolderMoved: a watch session stopped midway is
// finished by the next call even when that call names the folder another
// way (moved, or relative where the first was absolute), as a new session
// may: its files are known by sha256. The unfinished session looked for
// its files only at the paths the first call spelled, and every later
// call failed with "unfinished session … needs …".
func TestWatchPendingSessionFolderMoved(t *testing.T) {
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
	moved := filepath.Join(dir, "scored")
	if err := os.Rename(watch, moved); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	o.WatchDir = "scored"
	log.Reset()
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("the next call, the folder moved: %v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "finishing the session") {
		t.Errorf("the next call did not finish the session:\n%s", log.String())
	}
	man, err := run.ReadManifest()
	if err != nil || man.Pending != nil || len(man.Consumed) != 1 || man.Consumed[0].Step != 2 {
		t.Fatalf("manifest %+v, %v; want round1.parquet consumed at step 2", man, err)
	}
	if last, _, err := run.Latest(); err != nil || last != 2 {
		t.Errorf("latest %d (%v), want 2", last, err)
	}
}

// TestWatchPendingSessionAfterLatestMovedBack: latest moved back by hand
// before the step an unfinished watch session began at (to redo steps)
// begins that session again at the step the run continues from, with its
// length. The call panicked: the session's step index into its data order
// was negative.
func TestWatchPendingSessionAfterLatestMovedBack(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	watch := watchFolder(t, dir, md)
	o := baseOptions(md, dir, "cron")
	o.WatchDir, o.GroupsPerStep, o.Steps = watch, 1, 2
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	writeGroups(t, md, filepath.Join(watch, "round2.parquet"), 2, 3, varied)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := slog.New(cancelAfterStep{Handler: slog.NewTextHandler(&log, nil), cancel: cancel})
	if err := runWith(ctx, backend(t), o, stop); !errors.Is(err, context.Canceled) {
		t.Fatalf("the stopped call: %v, want context.Canceled\n%s", err, log.String())
	}
	run := &checkpoint.Run{Dir: filepath.Join(dir, "cron")}
	if man, err := run.ReadManifest(); err != nil || man.Pending == nil || man.Pending.StartStep != 2 {
		t.Fatalf("after the stop: manifest %+v, %v; want a session pending from step 2", man, err)
	}
	if err := runfolder.WritePointer(run.Dir, runfolder.LatestName, 1); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("the call after latest moved back: %v\n%s", err, log.String())
	}
	man, err := run.ReadManifest()
	if err != nil || man.Pending != nil || len(man.Consumed) != 2 || man.Consumed[1].Step != 3 {
		t.Fatalf("manifest %+v, %v; want round2.parquet consumed at step 3", man, err)
	}
	if last, _, err := run.Latest(); err != nil || last != 3 {
		t.Errorf("latest %d (%v), want 3", last, err)
	}
}

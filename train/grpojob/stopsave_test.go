package grpojob

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/train/checkpoint"
)

// TestStopSavesFinishedSteps: a run told to stop (SIGTERM, SIGINT: its
// context cancelled) with --save-every 3 after its first step saves that
// step before it returns, and the resumed run ends bit-identical to an
// uninterrupted one with each step's metrics row once. The stop returned
// with nothing saved: every step since the last save was trained again.
func TestStopSavesFinishedSteps(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	in := filepath.Join(dir, "a.parquet")
	writeGroups(t, md, in, 4, 4, varied)
	o := baseOptions(md, filepath.Join(dir, "adapters"), "ref", in)
	o.Steps, o.SaveEvery, o.GroupsPerStep = 4, 3, 1
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}

	k := o
	k.Name = "stopped"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := slog.New(cancelAfterStep{Handler: slog.NewTextHandler(&log, nil), cancel: cancel})
	if err := runWith(ctx, backend(t), k, stop); !errors.Is(err, context.Canceled) {
		t.Fatalf("the stopped run: %v, want context.Canceled\n%s", err, log.String())
	}
	run := &checkpoint.Run{Dir: filepath.Join(dir, "adapters", "stopped")}
	if last, ok, err := run.Latest(); err != nil || !ok || last != 1 {
		t.Fatalf("after the stop latest is %d (%v, %v), want step 1, the finished step\n%s", last, ok, err, log.String())
	}
	k.Resume = true
	if err := runWith(context.Background(), backend(t), k, textLog(&log)); err != nil {
		t.Fatalf("resume: %v\n%s", err, log.String())
	}
	for _, f := range []string{"adapter_model.safetensors", checkpoint.OptimizerName} {
		a, err := os.ReadFile(filepath.Join(dir, "adapters", "ref", runfolder.StepName(4), f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(run.StepDir(4), f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between the uninterrupted and the stopped-and-resumed run", f)
		}
	}
	rows := readMetrics(t, run.Dir)
	if len(rows) != 4 {
		t.Fatalf("%d metrics rows, want 4", len(rows))
	}
	for i, r := range rows {
		if int(r["step"]) != i+1 {
			t.Errorf("metrics row %d is step %v", i, r["step"])
		}
	}
}

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
	"github.com/hone-rl/hone/train/internal/stopat"
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

// armAtStep arms a cancelAtUpdate when a step's line is logged.
type armAtStep struct {
	slog.Handler
	armed *bool
}

func (h armAtStep) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "step" {
		*h.armed = true
	}
	return h.Handler.Handle(ctx, r)
}

// TestStopMidARTStepSavesFinishedStep: with --norm art (an optimizer update
// per packed row) and --save-every 3, a run stopped after step 2 took its
// first update saves step 1, and the resumed run ends bit-identical to an
// uninterrupted one. The stop saved nothing: the weights were part way
// into step 2, so step 1 was trained again.
func TestStopMidARTStepSavesFinishedStep(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	in := filepath.Join(dir, "a.parquet")
	writeGroups(t, md, in, 4, 4, varied)
	opts := func(run string) Options {
		o := baseOptions(md, filepath.Join(dir, "adapters"), run, in)
		o.Loss.Norm, o.PackedSeqLen, o.Steps, o.SaveEvery, o.GroupsPerStep = "art", 40, 3, 3, 2
		return o
	}
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), opts("ref"), textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	armed := false
	be := stopat.Update{Backend: backend(t), Armed: &armed, Cancel: cancel}
	stop := slog.New(armAtStep{Handler: slog.NewTextHandler(&log, nil), armed: &armed})
	if err := runWith(ctx, be, opts("stopped"), stop); !errors.Is(err, context.Canceled) {
		t.Fatalf("the stopped run: %v, want context.Canceled\n%s", err, log.String())
	}
	run := &checkpoint.Run{Dir: filepath.Join(dir, "adapters", "stopped")}
	if last, ok, err := run.Latest(); err != nil || !ok || last != 1 {
		t.Fatalf("after the stop latest is %d (%v, %v), want step 1, the finished step\n%s", last, ok, err, log.String())
	}
	o := opts("stopped")
	o.Resume = true
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("resume: %v\n%s", err, log.String())
	}
	for _, f := range []string{"adapter_model.safetensors", checkpoint.OptimizerName} {
		a, err := os.ReadFile(filepath.Join(dir, "adapters", "ref", runfolder.StepName(3), f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(run.StepDir(3), f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between the uninterrupted and the stopped-and-resumed --norm art run", f)
		}
	}
}

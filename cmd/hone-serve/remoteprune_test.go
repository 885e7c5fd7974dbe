package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/internal/fakes3d"
	"github.com/hone-rl/hone/internal/waitfor"
)

// A broken run deleted from the store was kept among the broken runs for
// the server's life: the set grew with every run ever broken and gone,
// and a new run of the same name, broken too, was never warned about. A
// run no longer listed is dropped, so its namesake is warned about.
func TestObjectStoreDeletedBrokenRunForgotten(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	dir := t.TempDir()
	tiny := "../../serve/testdata/tiny"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bad := s3.URL("hone", "adapters/a-bad/latest")
	if err := fileset.WriteFile(ctx, bad, []byte("step-000003\n")); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(dir, "train", "r1")
	publish := func(n int) { publishTestStep(t, tiny, local, s3.URL("hone", "adapters/r1"), n) }
	publish(1)
	var log waitfor.Buffer
	adapters := s3.URL("hone", "adapters")
	cache := filepath.Join(dir, "cache")
	stop, err := (&remoteAdapters{cache: cache}).start(ctx, &adapters, 5*time.Millisecond, 2, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if got := strings.Count(log.String(), "cannot pull the run"); got != 1 {
		t.Fatalf("the broken run warned about %d times, want once:\n%s", got, log.String())
	}
	if err := fileset.Remove(ctx, bad); err != nil {
		t.Fatal(err)
	}
	// r1's step 3 is pulled by a poll that began after the one that
	// pulled step 2, which read r1's latest after a-bad was deleted: that
	// poll's listing lacks a-bad.
	for n := 2; n <= 3; n++ {
		publish(n)
		waitfor.Until(t, 20*time.Second, fmt.Sprintf("r1's step %d pulled", n), func() bool {
			_, err := os.Stat(filepath.Join(cache, "r1", runfolder.StepName(n)))
			return err == nil
		})
	}
	if err := fileset.WriteFile(ctx, bad, []byte("step-000005\n")); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, 10*time.Second, "a new broken a-bad warned about", func() bool {
		return strings.Count(log.String(), "cannot pull the run") == 2
	})
}

// The steps left out of a pull were kept, each warned about once, for the
// server's life, though a pull that went through moves the copy's latest
// past them and they are never met again: the set grew with every step
// pruned while listed. A run's are dropped when it pulls; a copy removed
// from --adapters-cache, pulled again from the start, is warned about
// the step the store still holds in part.
func TestLeftOutStepForgottenOncePulled(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	dir := t.TempDir()
	tiny := "../../serve/testdata/tiny"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for n := 1; n <= 2; n++ {
		publishTestStep(t, tiny, filepath.Join(dir, "train", "r1"), s3.URL("hone", "adapters/r1"), n)
	}
	lost := s3.URL("hone", "adapters/r1/"+runfolder.StepName(1)+"/adapter_model.safetensors")
	if err := fileset.Remove(ctx, lost); err != nil {
		t.Fatal(err)
	}
	var log waitfor.Buffer
	adapters := s3.URL("hone", "adapters")
	cache := filepath.Join(dir, "cache")
	stop, err := (&remoteAdapters{cache: cache}).start(ctx, &adapters, 5*time.Millisecond, 2, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if got := strings.Count(log.String(), "left out"); got != 1 {
		t.Fatalf("%d warnings of a left-out step, want 1:\n%s", got, log.String())
	}
	if err := os.RemoveAll(filepath.Join(cache, "r1")); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, 10*time.Second, "the step left out of the new copy warned about", func() bool {
		return strings.Count(log.String(), "left out") >= 2
	})
}

package main

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/internal/fakes3d"
)

// TestLeftOutStepWarned: a step the store holds in part (a trainer
// pruning it while the poll listed it, or a file removed by hand) is left
// out by the pull, which goes on with the run's other steps; hone-serve
// warns once, naming the run, the step and the files it lacks. Before,
// the step was passed over without a word, and a run served short of a
// step gave no clue why.
func TestLeftOutStepWarned(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	dir := t.TempDir()
	tiny := "../../serve/testdata/tiny"
	for n := 1; n <= 2; n++ {
		publishTestStep(t, tiny, filepath.Join(dir, "train", "r1"), s3.URL("hone", "adapters/r1"), n)
	}
	lost := s3.URL("hone", "adapters/r1/"+runfolder.StepName(1)+"/adapter_model.safetensors")
	if err := fileset.Remove(context.Background(), lost); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	adapters := s3.URL("hone", "adapters")
	r := remoteAdapters{cache: filepath.Join(dir, "cache")}
	stop, err := r.start(context.Background(), &adapters, time.Hour, 2, log)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	var warned []string
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.Contains(l, "left out") {
			warned = append(warned, l)
		}
	}
	if len(warned) != 1 {
		t.Fatalf("%d warnings of a left-out step, want 1:\n%s", len(warned), buf.String())
	}
	for _, want := range []string{`"level":"WARN"`, `"run":"r1"`, `"step":1`, "adapter_model.safetensors"} {
		if !strings.Contains(warned[0], want) {
			t.Errorf("the warning lacks %s: %s", want, warned[0])
		}
	}
}

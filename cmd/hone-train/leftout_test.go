package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/internal/fakes3d"
	"github.com/hone-rl/hone/train/trainer"
)

// TestStartPullLeftOutStepWarned: a step the store holds in part (a
// file of its list removed, as a prune racing the pull leaves it) is left
// out of the start-up pull, and hone-train warns once, naming the run,
// the step and the file it lacks. Before, the trainer resumed without the
// step and said nothing of it.
func TestStartPullLeftOutStepWarned(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	ctx := context.Background()
	train := filepath.Join(t.TempDir(), "r")
	files := []string{"adapter_config.json", "adapter_model.safetensors"}
	for n := 1; n <= 2; n++ {
		for _, f := range files {
			p := filepath.Join(train, runfolder.StepName(n), f)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := runfolder.WritePointer(train, runfolder.LatestName, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := runfolder.Publish(ctx, train, s3.URL("hone", "adapters/r")); err != nil {
		t.Fatal(err)
	}
	if err := fileset.Remove(ctx, s3.URL("hone", "adapters/r/"+runfolder.StepName(1)+"/adapter_model.safetensors")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	r := remoteOut{every: time.Hour, cache: filepath.Join(t.TempDir(), "cache")}
	o := trainer.Options{Out: s3.URL("hone", "adapters"), Name: "r"}
	finish, err := r.start(ctx, &o, slog.New(slog.NewJSONHandler(&buf, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := finish(nil); err != nil {
		t.Fatal(err)
	}
	var warned []string
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.Contains(l, "left out") {
			warned = append(warned, l)
		}
	}
	if len(warned) != 1 {
		t.Fatalf("%d warnings of a left-out step, want 1:\n%s", len(warned), buf.String())
	}
	for _, want := range []string{`"level":"WARN"`, `"run":"r"`, `"step":1`, "adapter_model.safetensors"} {
		if !strings.Contains(warned[0], want) {
			t.Errorf("the warning lacks %s: %s", want, warned[0])
		}
	}
}

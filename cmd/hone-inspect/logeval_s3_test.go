package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/internal/fakes3d"
)

// TestLogEvalObjectStoreRunRefused: --run naming a run that hone-train
// published to an object store is refused as a usage error that says why
// (eval.jsonl is written under the run's lock, in the folder hone-train
// trains in), naming the URL without its query. It said "is not a
// training run folder: it has no latest" of a run that has one, with the
// store's query printed.
func TestLogEvalObjectStoreRunRefused(t *testing.T) {
	dir := t.TempDir()
	local, _, glob := writeRunFolder(t, dir, 2)
	s3 := fakes3d.StartTest(t, "hone")
	remote := s3.URL("hone", "adapters/r1")
	if _, err := runfolder.Publish(context.Background(), local, remote); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(glob)
	r := run(t, nil, "log-eval", "--run", remote, "--step", "1", files[0])
	if r.code != 2 || !strings.Contains(r.stderr, "s3://hone/adapters/r1") || !strings.Contains(r.stderr, "object store") ||
		strings.Contains(r.stderr, "has no latest") || strings.Contains(r.stderr, "endpoint=") {
		t.Errorf("log-eval --run on an object store: exit %d\n%s\nwant 2, saying it takes a local run folder", r.code, r.stderr)
	}
}

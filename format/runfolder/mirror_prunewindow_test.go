package runfolder

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/fileset/s3test"
)

// TestPullMirrorStepBeingPrunedIsNoRepublish: a trainer that moved on
// prunes the step the copy's latest names, deleting its files one by one
// (removeStep). A Mirror pull listing the step meanwhile found fewer
// files than it had copied, all as copied, and took the run for one
// deleted and published anew: it downloaded the whole run again and
// warned that it was replaced. A step listed with some of its files, each
// as copied, is the same run's being pruned; only a file the copy does not
// know, or one listed otherwise than copied, says the run is another.
func TestPullMirrorStepBeingPrunedIsNoRepublish(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t, s3test.Options{Buckets: []string{"bkt"}})
	store := srv.URL("bkt", "adapters/r")
	train := filepath.Join(t.TempDir(), "r")
	save := func(n int) {
		t.Helper()
		for _, f := range []string{"adapter_config.json", "adapter_model.safetensors"} {
			p := filepath.Join(train, StepName(n), f)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(f+" of "+StepName(n)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := WritePointer(train, LatestName, n); err != nil {
			t.Fatal(err)
		}
		if _, err := Publish(ctx, train, store); err != nil {
			t.Fatal(err)
		}
	}
	save(1)
	save(2)
	serve := filepath.Join(t.TempDir(), "r")
	var replaced [][2]int
	mirror := PullOptions{Mirror: true, Replaced: func(was, now int) { replaced = append(replaced, [2]int{was, now}) }}
	if got, err := Pull(ctx, store, serve, mirror); err != nil || !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("first pull: %v, %v", got, err)
	}
	save(3)
	// The prune of step 2 has deleted its first file, not yet the rest.
	if err := fileset.Remove(ctx, fileset.Join(store, StepName(2), "adapter_config.json")); err != nil {
		t.Fatal(err)
	}
	got, err := Pull(ctx, store, serve, mirror)
	if err != nil || !slices.Equal(got, []int{3}) {
		t.Errorf("pull while the copy's latest step is pruned from the store: %v, %v; want [3]", got, err)
	}
	if len(replaced) > 0 {
		t.Errorf("the copy was replaced (was, now: %v) while its run was only pruned", replaced)
	}
	for _, n := range []int{1, 2} {
		if _, err := os.Stat(filepath.Join(serve, StepName(n), "adapter_config.json")); err != nil {
			t.Errorf("the copy's %s, the same run's, was dropped: %v", StepName(n), err)
		}
	}
}

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

// publishRun writes steps 1..last of a new local run folder whose files
// say which run (tag) they are of, and publishes it to store.
func publishRun(t *testing.T, store, tag string, last int) {
	t.Helper()
	local := filepath.Join(t.TempDir(), "r")
	for n := 1; n <= last; n++ {
		p := filepath.Join(local, StepName(n), "adapter_model.safetensors")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(tag+" "+StepName(n)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := WritePointer(local, LatestName, last); err != nil {
		t.Fatal(err)
	}
	if _, err := Publish(context.Background(), local, store); err != nil {
		t.Fatal(err)
	}
}

// TestPullMirrorReplacesRepublishedRun: a run deleted from the store and
// trained again under its name (its latest now older than the copy's, or
// at the same step with other files) was never pulled again: Pull copied
// only steps newer than the copy's latest, and hone-serve served the old
// run's adapter for good. A mirror's copy (PullOptions.Mirror) is now
// replaced by the store's run, whole; a trainer's folder (no Mirror),
// ahead of the store by the steps it has not published, is not.
func TestPullMirrorReplacesRepublishedRun(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t, s3test.Options{Buckets: []string{"bkt"}})
	store := srv.URL("bkt", "adapters/r")
	serve := filepath.Join(t.TempDir(), "r")
	mirror := PullOptions{Mirror: true}
	publishRun(t, store, "old", 4)
	if got, err := Pull(ctx, store, serve, mirror); err != nil || !slices.Equal(got, []int{1, 2, 3, 4}) {
		t.Fatalf("first pull: %v, %v", got, err)
	}
	check := func(tag string, last int) {
		t.Helper()
		if l, ok, err := ReadPointer(serve, LatestName); err != nil || !ok || l.N != last {
			t.Errorf("the copy's latest: %v %v %v, want %s", l, ok, err, StepName(last))
		}
		steps, err := Steps(serve)
		if err != nil {
			t.Fatal(err)
		}
		if len(steps) != last {
			t.Errorf("the copy holds steps %v, want 1..%d of the %s run", steps, last, tag)
		}
		for n := 1; n <= last; n++ {
			b, err := os.ReadFile(filepath.Join(serve, StepName(n), "adapter_model.safetensors"))
			if want := tag + " " + StepName(n); err != nil || string(b) != want {
				t.Errorf("%s in the copy: %q, %v; want %q", StepName(n), b, err, want)
			}
		}
	}
	// Deleted and trained again to step 2: the store's latest is older.
	if err := fileset.RemoveAll(ctx, store); err != nil {
		t.Fatal(err)
	}
	publishRun(t, store, "new", 2)
	got, err := Pull(ctx, store, serve, mirror)
	if err != nil || !slices.Equal(got, []int{1, 2}) {
		t.Errorf("pull of the run published again from step 2: %v, %v; want [1 2]", got, err)
	}
	check("new", 2)
	// Deleted and trained again to the copy's step: same latest, other
	// files.
	if err := fileset.RemoveAll(ctx, store); err != nil {
		t.Fatal(err)
	}
	publishRun(t, store, "third", 2)
	got, err = Pull(ctx, store, serve, mirror)
	if err != nil || !slices.Equal(got, []int{1, 2}) {
		t.Errorf("pull of the run published again to the same step: %v, %v; want [1 2]", got, err)
	}
	check("third", 2)
	if got, err := Pull(ctx, store, serve, mirror); err != nil || got != nil {
		t.Errorf("a pull with nothing new copied %v, %v", got, err)
	}
	if ents, err := os.ReadDir(filepath.Dir(serve)); err != nil || len(ents) != 1 {
		t.Errorf("beside the copy: %v, %v; want the run folder only", ents, err)
	}
	// The store moves on: the same run's new steps are pulled as before.
	publishRun(t, store, "third", 3)
	if got, err := Pull(ctx, store, serve, mirror); err != nil || !slices.Equal(got, []int{3}) {
		t.Errorf("pull of the same run's next step: %v, %v; want [3]", got, err)
	}
	// A trainer's folder ahead of the store is its own: not replaced.
	if err := WritePointer(serve, LatestName, 9); err != nil {
		t.Fatal(err)
	}
	if got, err := Pull(ctx, store, serve, PullOptions{}); err != nil || got != nil {
		t.Errorf("a pull into a folder ahead of the store, without Mirror: %v, %v", got, err)
	}
	if l, _, _ := ReadPointer(serve, LatestName); l.N != 9 {
		t.Errorf("a pull without Mirror moved the folder's latest back to %d", l.N)
	}
}

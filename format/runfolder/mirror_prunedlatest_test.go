package runfolder

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/fileset/s3test"
)

// publishKept publishes a trainer's folder that holds steps kept of run
// tag (its --keep-last pruned the others) and metrics rows of steps
// 1..the last kept, each stamped with when the step ended, as hone-train
// writes them; runAt sets the stamps of the run apart.
func publishKept(t *testing.T, store, tag string, runAt int, kept ...int) {
	t.Helper()
	local := filepath.Join(t.TempDir(), "r")
	var rows strings.Builder
	last := kept[len(kept)-1]
	for n := 1; n <= last; n++ {
		fmt.Fprintf(&rows, `{"loss":0.5,"step":%d,"time":%d.125}`+"\n", n, runAt+n)
	}
	for _, n := range kept {
		p := filepath.Join(local, StepName(n), "adapter_model.safetensors")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(tag+" "+StepName(n)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(local, MetricsName), []byte(rows.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WritePointer(local, LatestName, last); err != nil {
		t.Fatal(err)
	}
	if _, err := Publish(context.Background(), local, store); err != nil {
		t.Fatal(err)
	}
}

// TestPullMirrorRepublishedPastPrunedLatest: a run deleted from the store
// and trained again under its name past the copy's latest, whose trainer
// pruned that step (--keep-last), was taken for the copied run moving on:
// the step the copy's latest names, no longer listed, told nothing, and
// the new run's steps were pulled on top of the old run's, two runs in
// one folder. The copy's newest metrics row (each row stamped with when
// its step ended) is in the store's metrics.jsonl while the run is the
// same; another row of that step says the run is another, and the copy
// is replaced. The same run moving on past a pruned latest is pulled as
// before.
func TestPullMirrorRepublishedPastPrunedLatest(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t, s3test.Options{Buckets: []string{"bkt"}})
	store := srv.URL("bkt", "adapters/r")
	serve := filepath.Join(t.TempDir(), "r")
	var replaced [][2]int
	mirror := PullOptions{Mirror: true, Replaced: func(was, now int) { replaced = append(replaced, [2]int{was, now}) }}
	publishKept(t, store, "old", 1000, 1, 2, 3)
	if got, err := Pull(ctx, store, serve, mirror); err != nil || !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("first pull: %v, %v", got, err)
	}
	// The same run trains on to step 5, keeping 4 and 5: the store's
	// step 3, the copy's latest, is pruned.
	publishKept(t, store, "old", 1000, 4, 5)
	if got, err := Pull(ctx, store, serve, mirror); err != nil || !slices.Equal(got, []int{4, 5}) {
		t.Fatalf("pull of the same run past its pruned step 3: %v, %v; want [4 5]", got, err)
	}
	if len(replaced) > 0 {
		t.Fatalf("the copy was replaced (was, now: %v) while its run only moved on", replaced)
	}
	if _, err := os.Stat(filepath.Join(serve, StepName(3))); err != nil {
		t.Fatalf("the copy's step 3, the same run's, was dropped: %v", err)
	}
	// Deleted, and trained again to step 7, keeping 6 and 7.
	if err := fileset.RemoveAll(ctx, store); err != nil {
		t.Fatal(err)
	}
	publishKept(t, store, "new", 2000, 6, 7)
	got, err := Pull(ctx, store, serve, mirror)
	if err != nil || !slices.Equal(got, []int{6, 7}) {
		t.Errorf("pull of the run published anew past the copy's latest: %v, %v; want [6 7]", got, err)
	}
	if !slices.Equal(replaced, [][2]int{{5, 7}}) {
		t.Errorf("replaced (was, now): %v; want [[5 7]]", replaced)
	}
	steps, err := Steps(serve)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range steps {
		b, _ := os.ReadFile(filepath.Join(serve, s.Name, "adapter_model.safetensors"))
		names = append(names, string(b))
	}
	if want := []string{"new " + StepName(6), "new " + StepName(7)}; !slices.Equal(names, want) {
		t.Errorf("the copy holds %q; want %q, the new run's alone", names, want)
	}
}

// TestPullMirrorRepublishedBeforeItsMetrics: a run deleted from the store
// and published anew past the copy's pruned latest has its steps up, and
// the store's latest on one of them, before its metrics.jsonl (Publish
// moves latest on to each step it uploads but the newest, then writes the
// run's files). A pull then found no metrics.jsonl in the store and took
// the run for the same one: the new run's step 6 was pulled on top of the
// old run's 1..5, and from then on the copy's latest was listed as copied,
// two runs in one folder for good. A store without the metrics.jsonl the
// copy took from it is a store whose run was deleted.
func TestPullMirrorRepublishedBeforeItsMetrics(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t, s3test.Options{Buckets: []string{"bkt"}})
	store := srv.URL("bkt", "adapters/r")
	serve := filepath.Join(t.TempDir(), "r")
	var replaced [][2]int
	mirror := PullOptions{Mirror: true, Replaced: func(was, now int) { replaced = append(replaced, [2]int{was, now}) }}
	publishKept(t, store, "old", 1000, 4, 5)
	if got, err := Pull(ctx, store, serve, mirror); err != nil || !slices.Equal(got, []int{4, 5}) {
		t.Fatalf("first pull: %v, %v", got, err)
	}
	if err := fileset.RemoveAll(ctx, store); err != nil {
		t.Fatal(err)
	}
	// The new run's first Publish part way: steps 6 and 7 up, latest
	// moved on to 6, its metrics.jsonl not yet written.
	publishKept(t, store, "new", 2000, 6, 7)
	if err := fileset.Remove(ctx, fileset.Join(store, MetricsName)); err != nil {
		t.Fatal(err)
	}
	if err := fileset.WriteFile(ctx, fileset.Join(store, LatestName), []byte(StepName(6)+"\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := Pull(ctx, store, serve, mirror); err != nil {
		t.Fatal(err)
	}
	// The Publish ends.
	publishKept(t, store, "new", 2000, 6, 7)
	if _, err := Pull(ctx, store, serve, mirror); err != nil {
		t.Fatal(err)
	}
	steps, err := Steps(serve)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range steps {
		b, _ := os.ReadFile(filepath.Join(serve, s.Name, "adapter_model.safetensors"))
		names = append(names, string(b))
	}
	if want := []string{"new " + StepName(6), "new " + StepName(7)}; !slices.Equal(names, want) {
		t.Errorf("the copy holds %q; want %q, the new run's alone (replaced, was and now: %v)", names, want, replaced)
	}
}

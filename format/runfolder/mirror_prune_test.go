package runfolder

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	_ "github.com/hone-rl/hone/format/fileset/blobdrivers"
	"github.com/hone-rl/hone/format/fileset/s3test"
)

// hookedS3 is an S3 server (gofakes3 over real HTTP) that calls onPut
// with the path of each PUT before serving it.
func hookedS3(t *testing.T, bucket string, onPut func(path string)) (url func(key string) string) {
	t.Helper()
	return hookedS3Requests(t, bucket, func(method, path string) {
		if method == http.MethodPut {
			onPut(path)
		}
	})
}

// hookedS3Requests is hookedS3 calling onRequest with the method and path
// of every request.
func hookedS3Requests(t *testing.T, bucket string, onRequest func(method, path string)) (url func(key string) string) {
	t.Helper()
	return hookedS3Full(t, bucket, onRequest, nil)
}

// hookedS3Full is hookedS3Requests also calling onQuery (if not nil) with
// each whole request, whose query a listing's prefix is in.
func hookedS3Full(t *testing.T, bucket string, onRequest func(method, path string), onQuery func(*http.Request)) (url func(key string) string) {
	t.Helper()
	srv := s3test.Start(t, s3test.Options{Buckets: []string{bucket}, Wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			onRequest(r.Method, r.URL.Path)
			if onQuery != nil {
				onQuery(r)
			}
			h.ServeHTTP(w, r)
		})
	}})
	return func(key string) string { return srv.URL(bucket, key) }
}

// hone-train publishes while it trains, and --keep-last prunes a step
// folder right after the next step is saved: a step being uploaded when
// it is pruned must reach the store whole or not at all. Before, the
// upload stopped at the first file gone, leaving a step folder in the
// store with part of its files, which no later Publish touched again and
// which a Pull (hone-serve's, a fresh trainer's) copied as a step.
func TestPublishStepPrunedWhileUploading(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	train := filepath.Join(dir, "train", "r")
	files := []string{"adapter_config.json", "adapter_model.safetensors"}
	writeStepFiles(t, train, 1, files...)
	if err := WritePointer(train, LatestName, 1); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	url := hookedS3(t, "bkt", func(path string) {
		// The trainer saves step 2 and prunes step 1 (--keep-last 1)
		// while the first file of step 1 is being uploaded.
		if strings.HasSuffix(path, "/"+StepName(1)+"/"+files[0]) {
			once.Do(func() {
				writeStepFiles(t, train, 2, files...)
				if err := WritePointer(train, LatestName, 2); err != nil {
					t.Error(err)
				}
				if err := os.RemoveAll(filepath.Join(train, StepName(1))); err != nil {
					t.Error(err)
				}
			})
		}
	})
	store := url("adapters/r")
	Publish(ctx, train, store) // may fail; the next publish goes on
	if _, err := Publish(ctx, train, store); err != nil {
		t.Fatalf("publish after the prune: %v", err)
	}
	for _, n := range []int{1, 2} {
		var have []string
		for _, f := range files {
			if _, err := fileset.ReadFile(ctx, fileset.Join(store, StepName(n), f)); err == nil {
				have = append(have, f)
			}
		}
		if len(have) != 0 && !slices.Equal(have, files) {
			t.Errorf("the store holds step %d with only %q of %q", n, have, files)
		}
	}
	serve := filepath.Join(dir, "serve", "r")
	got, err := Pull(ctx, store, serve, PullOptions{Newest: 2})
	if err != nil {
		t.Fatalf("pull: %v", err)
	}
	for _, n := range got {
		for _, f := range files {
			if _, err := os.Stat(filepath.Join(serve, StepName(n), f)); err != nil {
				t.Errorf("pulled step %d lacks %s", n, f)
			}
		}
	}
}

// A step pruned before Publish read it is not published; when that step
// is the latest Publish set out to publish (the trainer saved a newer one
// meanwhile), the store's latest is not pointed at it: it would name a
// step the store does not have.
func TestPublishLatestPrunedBeforeRead(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	train := filepath.Join(dir, "train", "r")
	files := []string{"adapter_config.json", "adapter_model.safetensors"}
	writeStepFiles(t, train, 1, files...)
	writeStepFiles(t, train, 2, files...)
	if err := WritePointer(train, LatestName, 2); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	url := hookedS3(t, "bkt", func(path string) {
		// While step 1 is uploaded the trainer saves step 3 and prunes
		// step 2 (step 1 is kept as the best).
		if strings.Contains(path, "/"+StepName(1)+"/") {
			once.Do(func() {
				writeStepFiles(t, train, 3, files...)
				if err := WritePointer(train, LatestName, 3); err != nil {
					t.Error(err)
				}
				if err := os.RemoveAll(filepath.Join(train, StepName(2))); err != nil {
					t.Error(err)
				}
			})
		}
	})
	store := url("adapters/r")
	Publish(ctx, train, store)
	check := func() {
		t.Helper()
		b, err := fileset.ReadFile(ctx, fileset.Join(store, LatestName))
		if err != nil {
			return // no latest yet is fine
		}
		name := strings.TrimSpace(string(b))
		if _, err := fileset.ReadFile(ctx, fileset.Join(store, name, files[0])); err != nil {
			t.Errorf("the store's latest names %s, which the store does not hold: %v", name, err)
		}
	}
	check()
	if got, err := Publish(ctx, train, store); err != nil {
		t.Fatalf("publish again: %v, %v", got, err)
	}
	check()
	if b, _ := fileset.ReadFile(ctx, fileset.Join(store, LatestName)); strings.TrimSpace(string(b)) != StepName(3) {
		t.Errorf("after the second publish the store's latest is %q, want %s", b, StepName(3))
	}
}

// --keep-last prunes the local run folder; the store keeps what it keeps.
// Before, Publish never deleted a step, so the store held every step ever
// trained and a fresh trainer's Pull downloaded all of them. The store's
// steps go only after the new step is whole in the store and its latest
// names it; the step latest names, a step kept locally (the best) and a
// step newer than the local latest stay.
func TestPublishDeletesPrunedSteps(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	train := filepath.Join(dir, "train", "r")
	files := []string{"adapter_config.json", "adapter_model.safetensors"}
	for n := 1; n <= 3; n++ {
		writeStepFiles(t, train, n, files...)
	}
	if err := WritePointer(train, LatestName, 3); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var deleted []string
	var store string
	url := hookedS3Requests(t, "bkt", func(method, p string) {
		if method != http.MethodDelete {
			return
		}
		mu.Lock()
		deleted = append(deleted, p)
		mu.Unlock()
		// Nothing is deleted before the new step and latest are in.
		b, err := fileset.ReadFile(ctx, fileset.Join(store, LatestName))
		if err != nil || strings.TrimSpace(string(b)) != StepName(4) {
			t.Errorf("DELETE %s while the store's latest is %q (%v), want %s", p, b, err, StepName(4))
		}
		for _, f := range files {
			if _, err := fileset.ReadFile(ctx, fileset.Join(store, StepName(4), f)); err != nil {
				t.Errorf("DELETE %s before step 4's %s is in the store: %v", p, f, err)
			}
		}
	})
	store = url("adapters/r")
	if _, err := Publish(ctx, train, store); err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 0 {
		t.Fatalf("the first publish deleted %q; every step is kept locally", deleted)
	}
	// A step beyond the local latest (another trainer's, an upload that
	// stopped) is not this publish's to judge.
	if err := fileset.WriteFile(ctx, fileset.Join(store, StepName(9), files[0]), []byte("x")); err != nil {
		t.Fatal(err)
	}
	// The trainer saves step 4 and prunes (--keep-last 1, step 2 the best).
	writeStepFiles(t, train, 4, files...)
	if err := WritePointer(train, LatestName, 4); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 3} {
		if err := os.RemoveAll(filepath.Join(train, StepName(n))); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := Publish(ctx, train, store); err != nil || !slices.Equal(got, []int{4}) {
		t.Fatalf("publish step 4: %v, %v", got, err)
	}
	storeSteps := func() []int {
		t.Helper()
		dirs, err := fileset.ListDirs(ctx, store)
		if err != nil {
			t.Fatal(err)
		}
		var ns []int
		for _, d := range dirs {
			if n, ok := ParseStepName(baseName(d)); ok {
				ns = append(ns, n)
			}
		}
		return ns
	}
	if got, want := storeSteps(), []int{2, 4, 9}; !slices.Equal(got, want) {
		t.Errorf("the store holds steps %v after the publish, want %v (deletes: %q)", got, want, deleted)
	}
	if want := 2 * (len(files) + 1); len(deleted) != want {
		t.Errorf("%d deletes, want %d (the files of steps 1 and 3 and their file lists): %q", len(deleted), want, deleted)
	}
	// Each step's file list goes after its files: a Pull that finds the
	// list finds a file it names missing while the step is deleted.
	for i, p := range deleted {
		if strings.HasSuffix(p, "/"+stepListName) && (i == 0 || !strings.HasPrefix(deleted[i-1], strings.TrimSuffix(p, stepListName))) {
			t.Errorf("%s deleted before that step's files: %q", p, deleted)
		}
	}
	// A fresh trainer pulls only what is kept.
	fresh := filepath.Join(dir, "fresh", "r")
	if got, err := Pull(ctx, store, fresh, PullOptions{}); err != nil || !slices.Equal(got, []int{2, 4}) {
		t.Errorf("a fresh pull copied steps %v (%v), want [2 4]", got, err)
	}

	// A store whose latest is not the local latest (the local one was
	// rolled back by hand) loses nothing.
	if err := os.RemoveAll(filepath.Join(train, StepName(2))); err != nil {
		t.Fatal(err)
	}
	writeStepFiles(t, train, 1, files...)
	if err := WritePointer(train, LatestName, 1); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	deleted = nil
	mu.Unlock()
	if _, err := Publish(ctx, train, store); err != nil {
		t.Fatal(err)
	}
	if got, want := storeSteps(), []int{2, 4, 9}; !slices.Equal(got, want) || len(deleted) != 0 {
		t.Errorf("with the local latest behind the store's, the store holds %v (want %v), deletes %q", got, want, deleted)
	}
}

// The run's other files are published as they were at the step the
// store's latest names, never ahead of it: hone-train writes
// manifest.json (the input files trained, by step) right after it moves
// latest, so a manifest read after the trainer saved a step, published
// with the store's latest still at the step before, says files were
// trained that the store's steps never saw. A trainer killed then (a
// preempted pod, with no final publish) left that store, and the next pod
// pulled it, took those files for trained and never trained them.
func TestPublishRunFilesNotAheadOfLatest(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	train := filepath.Join(dir, "train", "r")
	files := []string{"adapter_config.json", "adapter_model.safetensors"}
	manifest := func(n int) string { return "trained to " + StepName(n) + "\n" }
	writeStepFiles(t, train, 1, files...)
	if err := WritePointer(train, LatestName, 1); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(train, "manifest.json"), []byte(manifest(1)), 0o644); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	url := hookedS3(t, "bkt", func(path string) {
		// While step 1 is uploaded the trainer saves step 2, moves latest
		// and records step 2's files in its manifest, as hone-train does.
		if strings.HasSuffix(path, "/"+StepName(1)+"/"+files[0]) {
			once.Do(func() {
				writeStepFiles(t, train, 2, files...)
				if err := WritePointer(train, LatestName, 2); err != nil {
					t.Error(err)
				}
				if err := WriteFile(filepath.Join(train, "manifest.json"), []byte(manifest(2))); err != nil {
					t.Error(err)
				}
			})
		}
	})
	store := url("adapters/r")
	if _, err := Publish(ctx, train, store); err != nil {
		t.Fatalf("publish: %v", err)
	}
	// The trainer is killed here: what a fresh pod pulls is what the
	// store holds now.
	fresh := filepath.Join(dir, "fresh", "r")
	if _, err := Pull(ctx, store, fresh, PullOptions{}); err != nil {
		t.Fatalf("pull: %v", err)
	}
	latest, ok, err := ReadPointer(fresh, LatestName)
	if err != nil || !ok {
		t.Fatalf("the pulled run has no latest: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(fresh, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != manifest(latest.N) {
		t.Errorf("the store's latest names %s but its manifest.json says %q", latest.Name, b)
	}
}

// A trainer that saves a step during every step upload (a slow link,
// short steps) still moves the store's latest on at each Publish, with
// files no newer than it. Before, Publish read the run's files three
// times, each time finding latest moved, and gave up: the store's latest
// never moved while training ran (hone-serve following the store served
// the first step to the end) and every tick uploaded again every step
// since it.
func TestPublishMovesLatestWhileTrainerOutpacesUpload(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	train := filepath.Join(dir, "train", "r")
	files := []string{"adapter_config.json", "adapter_model.safetensors"}
	manifest := func(n int) string { return "trained to " + StepName(n) + "\n" }
	save := func(n int) {
		writeStepFiles(t, train, n, files...)
		if err := WritePointer(train, LatestName, n); err != nil {
			t.Error(err)
		}
		if err := WriteFile(filepath.Join(train, "manifest.json"), []byte(manifest(n))); err != nil {
			t.Error(err)
		}
	}
	save(1)
	var mu sync.Mutex
	saved := 1
	url := hookedS3(t, "bkt", func(path string) {
		// Each step's upload takes as long as the trainer's next step.
		if strings.HasSuffix(path, "/"+files[0]) && strings.Contains(path, "/step-") {
			mu.Lock()
			defer mu.Unlock()
			if saved < 20 {
				saved++
				save(saved)
			}
		}
	})
	store := url("adapters/r")
	if _, err := Publish(ctx, train, store); err != nil {
		t.Fatalf("publish: %v", err)
	}
	fresh := filepath.Join(dir, "fresh", "r")
	if _, err := Pull(ctx, store, fresh, PullOptions{}); err != nil {
		t.Fatalf("pull: %v", err)
	}
	latest, ok, err := ReadPointer(fresh, LatestName)
	if err != nil || !ok {
		t.Fatalf("after a Publish the store has no latest (err %v): the trainer saved a step during each upload", err)
	}
	b, err := os.ReadFile(filepath.Join(fresh, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	n, ok := 0, false
	for i := 1; i <= latest.N; i++ {
		if string(b) == manifest(i) {
			n, ok = i, true
		}
	}
	if !ok || n > latest.N {
		t.Errorf("the store's latest names %s but its manifest.json says %q", latest.Name, b)
	}
}

package runfolder

import (
	"context"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/fileset/s3test"
)

// TestPullReadsDamagedRecordAsNone: a record of steps pulled (pulledName)
// that does not parse (cut short by a full disk, written by an older
// hone) only spares downloads: the pull goes on as if there were none.
// Before, every pull of the run failed until someone deleted the file,
// and hone-serve never moved the run on again.
func TestPullReadsDamagedRecordAsNone(t *testing.T) {
	train := filepath.Join(t.TempDir(), "r")
	for n := 1; n <= 2; n++ {
		writeStepFiles(t, train, n, "adapter_model.safetensors")
	}
	if err := WritePointer(train, LatestName, 2); err != nil {
		t.Fatal(err)
	}
	srv := s3test.Start(t, s3test.Options{Buckets: []string{"bkt"}})
	store := srv.URL("bkt", "adapters/r")
	if _, err := Publish(context.Background(), train, store); err != nil {
		t.Fatal(err)
	}
	serve := filepath.Join(t.TempDir(), "r")
	if err := os.MkdirAll(serve, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(serve, pulledName), []byte(`{"from":-1,"steps":[{"na`), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Pull(context.Background(), store, serve, PullOptions{})
	if err != nil {
		t.Fatalf("pull over a damaged %s: %v", pulledName, err)
	}
	if want := []int{1, 2}; !slices.Equal(got, want) {
		t.Errorf("pulled %v, want %v", got, want)
	}
	if _, err := os.Stat(filepath.Join(serve, pulledName)); !os.IsNotExist(err) {
		t.Errorf("%s after the pull: %v, want it gone", pulledName, err)
	}
}

// TestPullRecordOfRepublishedStep: a step a cut-off pull renamed into
// place is taken as whole by the next pull only while the store's step is
// the one copied. A store rolled back (its latest pointed at an older
// step by hand) and trained on again holds new files under the same step
// name; before, the next pull kept the old copy, and hone-serve served
// the old weights under the new step's name.
func TestPullRecordOfRepublishedStep(t *testing.T) {
	train := filepath.Join(t.TempDir(), "r")
	for n := 1; n <= 2; n++ {
		writeStepFiles(t, train, n, "adapter_model.safetensors")
	}
	if err := WritePointer(train, LatestName, 2); err != nil {
		t.Fatal(err)
	}
	// While failing, the store refuses the GETs of step 1's files: the
	// pull renames step 2 into place (newest first), then stops.
	var mu sync.Mutex
	failing := true
	srv := s3test.Start(t, s3test.Options{Buckets: []string{"bkt"}, Wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			dir, file := path.Split(r.URL.Path)
			mu.Lock()
			fail := failing && r.Method == http.MethodGet && path.Base(dir) == StepName(1) && !strings.HasPrefix(file, ".")
			mu.Unlock()
			if fail {
				http.Error(w, "<Error><Code>AccessDenied</Code></Error>", http.StatusForbidden)
				return
			}
			h.ServeHTTP(w, r)
		})
	}})
	store := srv.URL("bkt", "adapters/r")
	ctx := context.Background()
	if _, err := Publish(ctx, train, store); err != nil {
		t.Fatal(err)
	}
	serve := filepath.Join(t.TempDir(), "r")
	if _, err := Pull(ctx, store, serve, PullOptions{}); err == nil {
		t.Fatal("the pull the store refused step 1 to returned no error")
	}
	// Rolled back to step 1 and trained again: step 2 is new.
	retrain := filepath.Join(t.TempDir(), "r")
	writeStepFiles(t, retrain, 1, "adapter_model.safetensors")
	if err := os.MkdirAll(filepath.Join(retrain, StepName(2)), 0o755); err != nil {
		t.Fatal(err)
	}
	const retrained = "adapter_model.safetensors retrained after the roll back"
	if err := os.WriteFile(filepath.Join(retrain, StepName(2), "adapter_model.safetensors"), []byte(retrained), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WritePointer(retrain, LatestName, 2); err != nil {
		t.Fatal(err)
	}
	if err := fileset.WriteFile(ctx, srv.URL("bkt", "adapters/r/"+LatestName), []byte(StepName(1)+"\n")); err != nil {
		t.Fatal(err)
	}
	if got, err := Publish(ctx, retrain, store); err != nil || !slices.Equal(got, []int{2}) {
		t.Fatalf("republish: %v, %v; want [2]", got, err)
	}
	mu.Lock()
	failing = false
	mu.Unlock()
	if _, err := Pull(ctx, store, serve, PullOptions{}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(serve, StepName(2), "adapter_model.safetensors"))
	if err != nil || string(b) != retrained {
		t.Errorf("%s pulled after its step was published again: %q, %v; want %q", StepName(2), b, err, retrained)
	}
}

package runfolder

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/hone-rl/hone/format/fileset"
	_ "github.com/hone-rl/hone/format/fileset/blobdrivers"
)

// hookedS3 is an S3 server (gofakes3 over real HTTP) that calls onPut
// with the path of each PUT before serving it.
func hookedS3(t *testing.T, bucket string, onPut func(path string)) (url func(key string) string) {
	t.Helper()
	be := s3mem.New()
	if err := be.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	h := gofakes3.New(be).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			onPut(r.URL.Path)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	return func(key string) string {
		return "s3://" + bucket + "/" + key + "?endpoint=" + srv.URL + "&use_path_style=true&disable_https=true&region=us-east-1"
	}
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

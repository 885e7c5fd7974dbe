package runfolder

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Pull reads each listed file of a step with one GET: the listing gave
// its size. Before, every file cost a HEAD as well (fileset.List, then
// fileset.ReadFile, which shared no buckets and so not the listing):
// two requests per file of every step pulled, hone-serve's on each new
// step. Publish and Pull go through a real S3 protocol server
// (gofakes3) that counts the requests for the step's files.
func TestPullListedStepFilesSkipHead(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	train := filepath.Join(dir, "train", "r")
	files := []string{"adapter_config.json", "adapter_model.safetensors", "optimizer.safetensors", "trainer_state.json"}
	writeStepFiles(t, train, 1, files...)
	if err := WritePointer(train, LatestName, 1); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	counts := map[string]int{}
	listReads := 0
	url := hookedS3Requests(t, "bkt", func(method, p string) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case strings.HasSuffix(p, "/"+StepName(1)+"/"+stepListName):
			// The step's file list, read before the folder is listed,
			// is no listed file: fileset.ReadFile's HEAD and GET.
			listReads++
		case strings.Contains(p, "/"+StepName(1)+"/"):
			counts[method]++
		}
	})
	store := url("adapters/r")
	if got, err := Publish(ctx, train, store); err != nil || len(got) != 1 {
		t.Fatalf("publish: %v, %v", got, err)
	}
	mu.Lock()
	clear(counts)
	listReads = 0
	mu.Unlock()
	serve := filepath.Join(dir, "serve", "r")
	if got, err := Pull(ctx, store, serve, PullOptions{}); err != nil || len(got) != 1 {
		t.Fatalf("pull: %v, %v", got, err)
	}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(serve, StepName(1), f)); err != nil {
			t.Fatalf("step file %s not pulled: %v", f, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if counts[http.MethodHead] != 0 || counts[http.MethodGet] != len(files) {
		t.Errorf("pulling a step of %d listed files made %d HEAD and %d GET requests for them, want 0 HEAD and %d GET", len(files), counts[http.MethodHead], counts[http.MethodGet], len(files))
	}
	if listReads > 2 {
		t.Errorf("reading the step's file list made %d requests, want at most 2", listReads)
	}
}

// Pull lists a step's folder once when Skip leaves out every file in it:
// before, finding nothing to copy, it listed the folder again to tell a
// pruned step (an empty prefix) from one whose files were all skipped,
// though the first listing had said so already.
func TestPullAllSkippedStepListsOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	train := filepath.Join(dir, "train", "r")
	writeStepFiles(t, train, 1, "adapter_config.json", "optimizer.safetensors")
	if err := WritePointer(train, LatestName, 1); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	lists := 0
	url := hookedS3Full(t, "bkt", func(string, string) {}, func(r *http.Request) {
		if r.Method == http.MethodGet && strings.Trim(r.URL.Path, "/") == "bkt" && strings.HasSuffix(r.URL.Query().Get("prefix"), "/"+StepName(1)+"/") {
			mu.Lock()
			lists++
			mu.Unlock()
		}
	})
	store := url("adapters/r")
	if got, err := Publish(ctx, train, store); err != nil || len(got) != 1 {
		t.Fatalf("publish: %v, %v", got, err)
	}
	mu.Lock()
	lists = 0
	mu.Unlock()
	serve := filepath.Join(dir, "serve", "r")
	if got, err := Pull(ctx, store, serve, PullOptions{Skip: func(string) bool { return true }}); err != nil || len(got) != 1 {
		t.Fatalf("pull: %v, %v", got, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if lists != 1 {
		t.Errorf("pulling a step whose every file is skipped listed its folder %d times, want 1", lists)
	}
}

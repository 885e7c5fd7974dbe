package runfolder

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/hone-rl/hone/format/fileset/s3test"
)

// TestPublishCutOffResumes: a publish cut off part way (hone-train's
// --publish-timeout on a store that stopped answering) keeps the steps it
// got up: the next publish uploads only the steps after the store's
// latest, not every step again. Before, the store's latest moved only
// once every step was up, so each attempt cut off redid them all, and a
// backlog longer than the deadline (a long outage, --keep-last 0) was
// never published.
func TestPublishCutOffResumes(t *testing.T) {
	train := filepath.Join(t.TempDir(), "r")
	files := []string{"adapter_config.json", "adapter_model.safetensors"}
	for n := 1; n <= 6; n++ {
		writeStepFiles(t, train, n, files...)
	}
	if err := WritePointer(train, LatestName, 6); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(train, "metrics.jsonl"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The store takes 6 PUTs and then holds every later one until its
	// client gives up, as a store that stopped answering does.
	const stallAfter = 6
	var mu sync.Mutex
	var puts int
	stalling := true
	release := make(chan struct{})    // lets held PUTs go when the test ends
	holding := make(chan struct{}, 1) // a PUT is held
	srv := s3test.Start(t, s3test.Options{Buckets: []string{"bkt"}, Wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			stall := false
			if r.Method == http.MethodPut {
				puts++
				stall = stalling && puts > stallAfter
			}
			mu.Unlock()
			if stall {
				// The body read, the server sees the client go away.
				io.Copy(io.Discard, r.Body)
				select {
				case holding <- struct{}{}:
				default:
				}
				select {
				case <-r.Context().Done():
				case <-release:
				}
				return
			}
			h.ServeHTTP(w, r)
		})
	}})
	t.Cleanup(func() { close(release) }) // before the server's close, which waits for them
	count := func() int { mu.Lock(); defer mu.Unlock(); return puts }
	store := srv.URL("bkt", "adapters/r")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := Publish(ctx, train, store); errc <- err }()
	select {
	case <-holding:
	case err := <-errc:
		t.Fatalf("the publish ended before the store held a PUT: %v", err)
	}
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the publish cut off returned no error")
	}
	mu.Lock()
	stalling = false
	mu.Unlock()
	at, ok, err := remoteLatest(context.Background(), store)
	if err != nil || !ok {
		t.Fatalf("the store has no latest after a cut-off publish that got %d PUTs up (%v): each attempt starts again from nothing", stallAfter, err)
	}
	before := count()
	done, err := Publish(context.Background(), train, store)
	if err != nil {
		t.Fatal(err)
	}
	var want []int
	for n := at.N + 1; n <= 6; n++ {
		want = append(want, n)
	}
	if !slices.Equal(done, want) {
		t.Errorf("the next publish uploaded steps %v; the store's latest was %s, want %v", done, at.Name, want)
	}
	// Each step's files, its file list and the latest moved past it, and
	// metrics.jsonl.
	after := count()
	if got, max := after-before, len(want)*(len(files)+2)+1; got > max {
		t.Errorf("the next publish made %d PUTs, want at most %d (steps %v)", got, max, want)
	}
	fresh := filepath.Join(t.TempDir(), "r")
	if _, err := Pull(context.Background(), store, fresh, PullOptions{}); err != nil {
		t.Fatalf("pull after the resumed publish: %v", err)
	}
	for n := 1; n <= 6; n++ {
		for _, f := range files {
			if b, err := os.ReadFile(filepath.Join(fresh, StepName(n), f)); err != nil || string(b) != f+" of "+StepName(n) {
				t.Errorf("%s/%s pulled: %q, %v", StepName(n), f, b, err)
			}
		}
	}
}

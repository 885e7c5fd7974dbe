package runfolder

import (
	"context"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
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

// TestPullCutOffResumes: a pull cut off part way (hone-serve's
// --poll-timeout, hone-train's --publish-timeout at start) keeps the
// steps it renamed into place: the next pull does not download them
// again. Before, the local latest moved only once every step was in, and
// the next pull started from it, so each attempt downloaded the same
// steps again, and a run whose new steps took longer than the deadline
// was never pulled.
func TestPullCutOffResumes(t *testing.T) {
	train := filepath.Join(t.TempDir(), "r")
	files := []string{"adapter_config.json", "adapter_model.safetensors"}
	for n := 1; n <= 4; n++ {
		writeStepFiles(t, train, n, files...)
	}
	if err := WritePointer(train, LatestName, 4); err != nil {
		t.Fatal(err)
	}
	// The store answers the GETs of steps 4 and 3 (Pull goes newest
	// first) and holds the first of step 2's until its client gives up.
	var mu sync.Mutex
	gets := map[string]int{} // step name → GETs of its files (not its list)
	stalling := true
	release := make(chan struct{})
	holding := make(chan struct{}, 1)
	srv := s3test.Start(t, s3test.Options{Buckets: []string{"bkt"}, Wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			step, file := path.Split(r.URL.Path)
			step = path.Base(step)
			mu.Lock()
			stall := false
			if _, ok := ParseStepName(step); ok && r.Method == http.MethodGet && !strings.HasPrefix(file, ".") {
				gets[step]++
				stall = stalling && step == StepName(2)
			}
			mu.Unlock()
			if stall {
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
	t.Cleanup(func() { close(release) })
	store := srv.URL("bkt", "adapters/r")
	if _, err := Publish(context.Background(), train, store); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	clear(gets)
	mu.Unlock()
	serve := filepath.Join(t.TempDir(), "r")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := Pull(ctx, store, serve, PullOptions{}); errc <- err }()
	select {
	case <-holding:
	case err := <-errc:
		t.Fatalf("the pull ended before the store held a GET of %s: %v", StepName(2), err)
	}
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the pull cut off returned no error")
	}
	mu.Lock()
	stalling = false
	clear(gets)
	mu.Unlock()
	got, err := Pull(context.Background(), store, serve, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{1, 2, 3, 4}; !slices.Equal(got, want) {
		t.Errorf("the next pull returned steps %v, want %v", got, want)
	}
	mu.Lock()
	for _, n := range []int{3, 4} {
		if g := gets[StepName(n)]; g > 0 {
			t.Errorf("the next pull sent %d GETs of %s, which the cut-off pull had renamed into place; want 0", g, StepName(n))
		}
	}
	for _, n := range []int{1, 2} {
		if g := gets[StepName(n)]; g != len(files) {
			t.Errorf("the next pull sent %d GETs of %s, want %d", g, StepName(n), len(files))
		}
	}
	mu.Unlock()
	for n := 1; n <= 4; n++ {
		for _, f := range files {
			if b, err := os.ReadFile(filepath.Join(serve, StepName(n), f)); err != nil || string(b) != f+" of "+StepName(n) {
				t.Errorf("%s/%s pulled: %q, %v", StepName(n), f, b, err)
			}
		}
	}
	if l, ok, err := ReadPointer(serve, LatestName); err != nil || !ok || l.N != 4 {
		t.Errorf("local latest after the pull: %v %v %v, want %s", l, ok, err, StepName(4))
	}
}

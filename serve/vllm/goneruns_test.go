package vllm

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/waitfor"
)

// fakeHolds returns the names the fake vLLM holds, sorted.
func fakeHolds(fake *fakeVLLM) []string {
	fake.mu.Lock()
	defer fake.mu.Unlock()
	return slices.Sorted(slices.Values(fake.loaded))
}

// TestSyncUnloadsRemovedRun: a run folder the operator deleted has all its
// versions unloaded at the second Sync in a row that finds it gone, other
// runs untouched; one whose
// unload fails is tried again at the Sync after, and the run is forgotten
// only once vLLM holds none of its versions. Before, Sync no longer
// visited the run, and vLLM kept its LoRA weights (and a --max-loras slot)
// for good.
func TestSyncUnloadsRemovedRun(t *testing.T) {
	fake, f, dir := newFixture(t, Options{KeepAdapters: 2})
	ctx := context.Background()
	syncSteps(t, f, dir, "r", 3)
	writeStep(t, dir, "s", 1)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	fake.takeCalls()
	if got := fakeHolds(fake); !slices.Equal(got, []string{"r@2", "r@3", "s@1"}) {
		t.Fatalf("vLLM holds %v, want r@2 r@3 s@1", got)
	}
	if err := os.RemoveAll(filepath.Join(dir, "r")); err != nil {
		t.Fatal(err)
	}
	// Missing at one Sync is not enough: a run folder swapped in by two
	// renames is missing for a moment between them.
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls())
	wantModel(t, f, "r@2", "r@2")
	fake.mu.Lock()
	fake.failUnload = map[string]int{"r@3": 503}
	fake.mu.Unlock()
	if err := f.Sync(ctx); err == nil || !strings.Contains(err.Error(), "r@3") {
		t.Fatalf("Sync with r@3's unload failing = %v; want an error naming r@3", err)
	}
	wantCalls(t, fake.takeCalls(), unload("r@2"), unload("r@3"))
	if got, ok := f.Model("r@2"); ok {
		t.Fatalf(`Model("r@2") = %q after its run folder was deleted; want it unresolved`, got)
	}
	fake.mu.Lock()
	fake.failUnload = nil
	fake.mu.Unlock()
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls(), unload("r@3"))
	if got := fakeHolds(fake); !slices.Equal(got, []string{"s@1"}) {
		t.Fatalf("vLLM holds %v, want [s@1]", got)
	}
	if got := f.Loaded(); !slices.Equal(got, []string{"s@1"}) {
		t.Fatalf("Loaded = %v, want [s@1]", got)
	}
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls()) // the run is forgotten: nothing more
	// Trained again under its name, the run is loaded anew.
	p1 := writeStep(t, dir, "r", 1)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls(), load("r@1", p1))
	wantModel(t, f, "r", "r@1")
}

// TestSyncUnloadsRemovedRunOnceRequestsEnd: a version kept in vLLM for the
// requests using it (a replaced step gone stale, or the step "<run>" maps
// to) whose run folder is then deleted is unloaded by the first Sync after
// those requests ended (and the folder was found gone at two Syncs). Before, the stale step stayed in vLLM for good:
// only a visit of the run (which a deleted run gets no more) unloaded it.
func TestSyncUnloadsRemovedRunOnceRequestsEnd(t *testing.T) {
	fake, f, dir := newFixture(t, Options{KeepAdapters: 3})
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	syncSteps(t, f, dir, "r", 3)
	fake.takeCalls()
	endStale := heldStream(t, fake, srv, "r@2", "r@2")
	redoStep(t, dir, "r", 2, "redo", "", time.Now().Add(time.Hour))
	setLatest(t, dir, "r", 2)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls()) // r@2 stale, kept for its request
	endLoaded := heldStream(t, fake, srv, "r@3", "r@3")
	if err := os.RemoveAll(filepath.Join(dir, "r")); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the first Sync that finds it gone waits for the next
		if err := f.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	wantCalls(t, fake.takeCalls(), unload("r@1")) // r@2 and r@3 in use
	if got, ok := f.Model("r@3"); ok {
		t.Fatalf(`Model("r@3") = %q after its run folder was deleted; want it unresolved`, got)
	}
	for _, end := range []func() string{endStale, endLoaded} {
		if rest := end(); !strings.Contains(rest, "[DONE]") {
			t.Fatalf("rest of the stream %q", rest)
		}
	}
	waitfor.Until(t, 10*time.Second, "the deleted run's versions unloaded once their requests ended", func() bool {
		if err := f.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		return len(fakeHolds(fake)) == 0
	})
	got := fake.takeCalls()
	slices.SortFunc(got, func(a, b call) int {
		return strings.Compare(a.Body["lora_name"].(string), b.Body["lora_name"].(string))
	})
	wantCalls(t, got, unload("r@2"), unload("r@3"))
}

package vllm

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/waitfor"
)

// heldStream sends a streamed chat request for model through srv and
// reads its first chunk, which must come from the version servedBy; the
// fake vLLM holds the rest back, so the request stays in flight until end
// is called. end lets the rest come, reads it to the end of the stream,
// closes the body and returns what it read.
func heldStream(t *testing.T, fake *fakeVLLM, srv *httptest.Server, model, servedBy string) (end func() string) {
	t.Helper()
	release := make(chan struct{})
	open := sync.OnceFunc(func() { close(release) })
	t.Cleanup(open) // before srv.Close, which waits for the stream
	fake.mu.Lock()
	fake.release = release // the stream's second chunk waits
	fake.mu.Unlock()
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"`+model+`","stream":true,"messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() }) // runs before open, as a deferred close did
	br := bufio.NewReader(resp.Body)
	if first, err := br.ReadString('\n'); err != nil || !strings.Contains(first, `"model":"`+servedBy+`"`) {
		t.Fatalf("first chunk %q, %v", first, err)
	}
	return func() string {
		t.Helper()
		open()
		rest, err := io.ReadAll(br)
		if err != nil {
			t.Fatalf("rest of the stream %q, %v", rest, err)
		}
		resp.Body.Close()
		return string(rest)
	}
}

// TestKeepOneWaitsForRequestsInFlight: with KeepAdapters 1, a new step does
// not unload the version a request in flight was sent to ("<run>" mapped
// to it, or named): vLLM would answer a request still on its way "does not
// exist", and cut the stream of one it holds. The version stays loaded,
// and still resolves, until its last request ends; the next Sync after
// that unloads it. Before, the load of the new step was followed at once
// by the unload of the version the stream was reading.
func TestKeepOneWaitsForRequestsInFlight(t *testing.T) {
	fake, f, dir := newFixture(t, Options{KeepAdapters: 1})
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	p1 := writeStep(t, dir, "r", 1)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls(), load("r@1", p1))
	end := heldStream(t, fake, srv, "r", "r@1")
	p2 := writeStep(t, dir, "r", 2)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls(), load("r@2", p2)) // r@1 is in use: kept
	if got, ok := f.Model("r@1"); !ok || got != "r@1" {
		t.Fatalf(`Model("r@1") while its request runs = %q, %v; want it still loaded`, got, ok)
	}
	if got, _ := f.Model("r"); got != "r@2" {
		t.Fatalf(`Model("r") = %q, want the new step r@2`, got)
	}
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls()) // still in use
	if rest := end(); !strings.Contains(rest, "[DONE]") {
		t.Fatalf("rest of the stream %q", rest)
	}
	// The front's handler may still be returning after the client read
	// the end; a Sync once it has unloads.
	waitfor.Until(t, 10*time.Second, "r@1 unloaded once its request ended", func() bool {
		if err := f.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		return !slices.Contains(f.Loaded(), "r@1")
	})
	wantCalls(t, fake.takeCalls(), unload("r@1"))
	if got := f.Loaded(); !slices.Equal(got, []string{"r@2"}) {
		t.Fatalf("Loaded = %v, want [r@2]", got)
	}
}

// TestReplacedStepWaitsForRequestsInFlight: a step folder written again
// (a redone run) while a request reads the version vLLM holds under its
// name is not unloaded under that request: "<run>" goes to the previous
// step and "<run>@<step>" resolves to nothing at once, as while a replaced
// step is reloaded, but the unload and the load of the new folder wait
// until the request ended; the next Sync after that does both. Before, the
// unload came at once, and vLLM answered a request still on its way "does
// not exist" and cut the stream of one it held.
func TestReplacedStepWaitsForRequestsInFlight(t *testing.T) {
	fake, f, dir := newFixture(t, Options{KeepAdapters: 2})
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	p := syncSteps(t, f, dir, "r", 2)
	fake.takeCalls()
	end := heldStream(t, fake, srv, "r", "r@2")
	redoStep(t, dir, "r", 2, "redo", "", time.Now().Add(time.Hour))
	for range 2 {
		if err := f.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		wantCalls(t, fake.takeCalls()) // r@2 is in use: kept as vLLM holds it
		wantModel(t, f, "r", "r@1")
		if got, ok := f.Model("r@2"); ok {
			t.Fatalf(`Model("r@2") = %q while its folder waits to be reloaded; want it unresolved`, got)
		}
	}
	if rest := end(); !strings.Contains(rest, "[DONE]") {
		t.Fatalf("rest of the stream %q", rest)
	}
	waitfor.Until(t, 10*time.Second, "r@2 reloaded once its request ended", func() bool {
		if err := f.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		to, _ := f.Model("r")
		return to == "r@2"
	})
	wantCalls(t, fake.takeCalls(), unload("r@2"), load("r@2", p[2]))
	if got := fake.readFrom("r@2"); !strings.Contains(got, `"revision":"redo"`) {
		t.Fatalf("vLLM holds r@2 from %s; want the redone folder", got)
	}
	if got := f.Loaded(); !slices.Equal(got, []string{"r@1", "r@2"}) {
		t.Fatalf("Loaded = %v, want r@1 r@2", got)
	}
}

// TestStaleStepUnloadedWhenRunMovesOn: a replaced step kept in vLLM for the
// requests using it is unloaded once they ended even when the run moved on
// to a new step meanwhile (the replaced step is current no more, so it is
// not loaded again): it does not stay in vLLM beyond KeepAdapters.
func TestStaleStepUnloadedWhenRunMovesOn(t *testing.T) {
	fake, f, dir := newFixture(t, Options{KeepAdapters: 2})
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	syncSteps(t, f, dir, "r", 2)
	fake.takeCalls()
	end := heldStream(t, fake, srv, "r@2", "r@2")
	redoStep(t, dir, "r", 2, "redo", "", time.Now().Add(time.Hour))
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls())
	p3 := writeStep(t, dir, "r", 3)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls(), load("r@3", p3)) // r@2 still in use
	end()
	waitfor.Until(t, 10*time.Second, "the replaced r@2 unloaded once its request ended", func() bool {
		if err := f.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		fake.mu.Lock()
		defer fake.mu.Unlock()
		return !slices.Contains(fake.loaded, "r@2")
	})
	wantCalls(t, fake.takeCalls(), unload("r@2"))
	if got := f.Loaded(); !slices.Equal(got, []string{"r@1", "r@3"}) {
		t.Fatalf("Loaded = %v, want r@1 r@3", got)
	}
}

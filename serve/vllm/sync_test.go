package vllm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/peft"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/format/safetensors"
)

// writePEFT writes a real PEFT adapter folder DIR/run/step-N in dtype with
// poison at one element of a lora_B matrix, and points latest at it.
func writePEFT(t *testing.T, dir, run string, step int, dtype safetensors.DType, poison float32) string {
	t.Helper()
	name := fmt.Sprintf("step-%06d", step)
	p := filepath.Join(dir, run, name)
	b := make([]float32, 8*2)
	b[5] = poison
	a := make([]float32, 2*8)
	for i := range a {
		a[i] = 0.01 * float32(i)
	}
	pa := &peft.Adapter{Config: peft.Config{R: 2, LoraAlpha: 4, TargetModules: []string{"q_proj"}}, DType: dtype}
	pa.Set(0, "q_proj", peft.LoRA{A: a, B: b, R: 2, In: 8, Out: 8})
	if err := peft.Write(p, pa); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, run, "latest"), []byte(name+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSyncRefusesNonFinite: a step whose weights hold a NaN or an infinity
// is never pushed to vLLM; "<run>" stays on the previous step and the
// refusal is reported once.
func TestSyncRefusesNonFinite(t *testing.T) {
	fake, f, dir := newFixture(t, Options{KeepAdapters: 2})
	ctx := context.Background()
	p1 := writePEFT(t, dir, "r", 1, safetensors.BF16, 0.5)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls(), load("r@1", p1))
	for step, tc := range map[int]struct {
		dtype  safetensors.DType
		poison float32
		want   string
	}{
		2: {safetensors.BF16, float32(math.NaN()), "holds NaN at element 5"},
		3: {safetensors.F16, float32(math.Inf(-1)), "holds -Inf at element 5"},
		4: {safetensors.F32, float32(math.Inf(1)), "holds +Inf at element 5"},
	} {
		writePEFT(t, dir, "r", step, tc.dtype, tc.poison)
		err := f.Sync(ctx)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "still serving r@1") {
			t.Fatalf("step %d (%s): Sync = %v; want a refusal naming %q", step, tc.dtype, err, tc.want)
		}
		if err := f.Sync(ctx); err != nil {
			t.Fatalf("step %d: second Sync of the unchanged folder: %v", step, err)
		}
		wantCalls(t, fake.takeCalls()) // vLLM never asked
		if got, _ := f.Model("r"); got != "r@1" {
			t.Fatalf(`step %d: Model("r") = %q, want r@1`, step, got)
		}
	}
}

// TestSyncRefusesOutside: a step folder or weights file linked to a place
// outside the adapters folder is not pushed to vLLM; a run folder linked
// inside it is.
func TestSyncRefusesOutside(t *testing.T) {
	fake, f, dir := newFixture(t, Options{KeepAdapters: 2})
	ctx := context.Background()
	outside := t.TempDir()
	p1 := writeStep(t, dir, "r", 1)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls(), load("r@1", p1))
	o2 := writeStep(t, outside, "x", 2)
	if err := os.Symlink(o2, filepath.Join(dir, "r", "step-000002")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "r", "latest"), []byte("step-000002"), 0o644)
	err := f.Sync(ctx)
	if !errors.Is(err, runfolder.ErrOutside) || !strings.Contains(err.Error(), o2) {
		t.Fatalf("Sync with a step folder linked outside: %v; want ErrOutside naming %s", err, o2)
	}
	if err := f.Sync(ctx); err != nil {
		t.Fatalf("the same link reported again: %v", err)
	}
	// A real folder whose weights file links outside.
	p3 := writeStep(t, dir, "r", 3)
	w := filepath.Join(p3, "adapter_model.safetensors")
	os.Remove(w)
	os.Symlink(filepath.Join(o2, "adapter_model.safetensors"), w)
	if err := f.Sync(ctx); !errors.Is(err, runfolder.ErrOutside) {
		t.Fatalf("Sync with a weights file linked outside: %v; want ErrOutside", err)
	}
	wantCalls(t, fake.takeCalls())
	if got, _ := f.Model("r"); got != "r@1" {
		t.Fatalf(`Model("r") = %q, want r@1`, got)
	}
	// An alias run folder inside the adapters folder is followed.
	os.WriteFile(filepath.Join(dir, "r", "latest"), []byte("step-000001"), 0o644)
	if err := os.Symlink("r", filepath.Join(dir, "alias")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls(), load("alias@1", filepath.Join(dir, "alias", "step-000001")))
}

// TestSyncReportsOnce: a missing adapters folder and a bad latest file are
// each reported once while they last, and again when they change or come
// back, so Watch does not log them at every poll.
func TestSyncReportsOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "adapters")
	_, f, _ := newFixture(t, Options{AdaptersDir: dir})
	ctx := context.Background()
	var errs []string
	syncN := func(n int) {
		for range n {
			if err := f.Sync(ctx); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	syncN(3)
	os.Mkdir(dir, 0o755)
	syncN(2)
	os.Remove(dir)
	syncN(2)
	if len(errs) != 2 || !strings.Contains(errs[0], "reading adapters folder") || errs[1] != errs[0] {
		t.Fatalf("missing, present, missing folder: errors %q; want the folder error twice", errs)
	}
	errs = nil
	writeStep(t, dir, "r", 1)
	os.WriteFile(filepath.Join(dir, "r", "latest"), []byte("step-x"), 0o644)
	syncN(3)
	os.WriteFile(filepath.Join(dir, "r", "latest"), []byte("../../etc"), 0o644)
	syncN(3)
	os.WriteFile(filepath.Join(dir, "r", "latest"), []byte("step-000001"), 0o644)
	syncN(2)
	os.WriteFile(filepath.Join(dir, "r", "latest"), []byte("step-x"), 0o644)
	syncN(2)
	if len(errs) != 3 || !strings.Contains(errs[0], `"step-x"`) || !strings.Contains(errs[1], `"../../etc"`) || errs[2] != errs[0] {
		t.Fatalf("bad, other bad, good, bad latest: errors %q; want three reports", errs)
	}
}

// TestSyncRollback: latest rolled back to a step vLLM still holds switches
// "<run>" to it without a call; the version dropped next is the least
// recently current one, never the current one.
func TestSyncRollback(t *testing.T) {
	fake, f, dir := newFixture(t, Options{KeepAdapters: 2})
	ctx := context.Background()
	p := syncSteps(t, f, dir, "r", 3)
	fake.takeCalls()
	latest := func(n int) {
		os.WriteFile(filepath.Join(dir, "r", "latest"), []byte(fmt.Sprintf("step-%06d\n", n)), 0o644)
		for range 3 {
			if err := f.Sync(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	latest(2)
	wantCalls(t, fake.takeCalls()) // still loaded: no call
	if got, _ := f.Model("r"); got != "r@2" {
		t.Fatalf(`Model("r") = %q after latest → step 2, want r@2`, got)
	}
	latest(1)
	wantCalls(t, fake.takeCalls(), load("r@1", p[1]), unload("r@3"))
	if got, _ := f.Model("r"); got != "r@1" {
		t.Fatalf(`Model("r") = %q after latest → step 1, want r@1`, got)
	}
	if got := f.Loaded(); !slices.Equal(got, []string{"r@1", "r@2"}) {
		t.Fatalf("Loaded = %v, want r@1 r@2", got)
	}
}

// TestSyncAfterUpstreamRestart: a vLLM that restarted under a running
// front holds none of the versions the front loaded. Unloading one of
// them is answered 404 "cannot be found"; that version is gone all the
// same, so it is dropped, not retried (and reported) at every Sync.
func TestSyncAfterUpstreamRestart(t *testing.T) {
	for _, st := range []int{404, 400} {
		t.Run(fmt.Sprint(st), func(t *testing.T) { testSyncAfterUpstreamRestart(t, st) })
	}
}

func testSyncAfterUpstreamRestart(t *testing.T, unloadMissing int) {
	fake, f, dir := newFixture(t, Options{KeepAdapters: 2})
	fake.unloadMissing = unloadMissing
	ctx := context.Background()
	for n := 1; n <= 2; n++ {
		writeStep(t, dir, "r", n)
		if err := f.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	fake.takeCalls()
	fake.mu.Lock()
	fake.loaded = nil // vLLM restarted: it holds no adapter
	fake.mu.Unlock()
	p3 := writeStep(t, dir, "r", 3)
	if err := f.Sync(ctx); err != nil {
		t.Fatalf("Sync after vLLM restarted: %v", err)
	}
	wantCalls(t, fake.takeCalls(), load("r@3", p3), unload("r@1"))
	for range 2 {
		if err := f.Sync(ctx); err != nil {
			t.Fatalf("later Sync: %v", err)
		}
	}
	wantCalls(t, fake.takeCalls()) // nothing left to unload
	if got := f.Loaded(); !slices.Equal(got, []string{"r@2", "r@3"}) {
		t.Fatalf("Loaded = %v, want r@2 r@3", got)
	}
	if _, ok := f.Model("r@1"); ok {
		t.Fatal("r@1 still resolves after vLLM said it holds no such adapter")
	}
}

// TestSyncRetriesUnansweredLoad: a front started before its vLLM listens
// (vLLM takes minutes to load a model) gets no answer to its first load.
// That is no refusal of the folder: the load is tried again at the next
// Sync, without the folder changing, and the outage is reported once.
func TestSyncRetriesUnansweredLoad(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there yet: connection refused
	dir := t.TempDir()
	f, err := NewFront(Options{Upstream: "http://" + addr, AdaptersDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p := writeStep(t, dir, "r", 1)
	if err := f.Sync(ctx); err == nil || !strings.Contains(err.Error(), "r@1") {
		t.Fatalf("Sync with vLLM not listening: %v, want the failed load of r@1", err)
	}
	if err := f.Sync(ctx); err != nil {
		t.Fatalf("second Sync with vLLM still not listening: %v, want the outage reported once", err)
	}
	// vLLM comes up on its address.
	fake := &fakeVLLM{t: t, failOn: map[string]int{}}
	up := httptest.NewUnstartedServer(fake)
	if up.Listener, err = net.Listen("tcp", addr); err != nil {
		t.Skipf("port %s taken meanwhile: %v", addr, err)
	}
	up.Start()
	defer up.Close()
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls(), load("r@1", p))
	if got, _ := f.Model("r"); got != "r@1" {
		t.Fatalf(`Model("r") = %q once vLLM answers, want r@1`, got)
	}
}

// TestLoadUnreadableFolder: vLLM answers a folder it cannot read (no
// shared disk, another mount point) with 404 "No adapter found"; the error
// says to share the folder, not that the runtime LoRA API is off.
func TestLoadUnreadableFolder(t *testing.T) {
	fake, f, dir := newFixture(t, Options{})
	p := writeStep(t, dir, "r", 1)
	fake.failOn["r@1"] = 404
	fake.failMsg = map[string]string{"r@1": "Loading lora r@1 failed: No adapter found for " + p}
	err := f.Sync(context.Background())
	if err == nil || !strings.Contains(err.Error(), "No adapter found") {
		t.Fatalf("Sync: %v, want vLLM's answer", err)
	}
	if strings.Contains(err.Error(), "VLLM_ALLOW_RUNTIME_LORA_UPDATING") {
		t.Fatalf("Sync: %v\nblames the runtime LoRA setting, which works (vLLM answered the load)", err)
	}
	if !strings.Contains(err.Error(), "same absolute path") {
		t.Fatalf("Sync: %v\nwant a hint that vLLM must read the folder at the same path", err)
	}
}

// TestSyncHungLoadTimesOut: a vLLM that takes a load and never answers
// fails it after CallTimeout, a load with no answer (retried at the next
// Sync), instead of holding Sync, and every run's syncing, for ever.
func TestSyncHungLoadTimesOut(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer up.Close()
	defer close(release)
	dir := t.TempDir()
	f, err := NewFront(Options{Upstream: up.URL, AdaptersDir: dir, CallTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	writeStep(t, dir, "r", 1)
	done := make(chan error, 1)
	go func() { done <- f.Sync(context.Background()) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "r@1") {
			t.Fatalf("Sync against a hung vLLM: %v, want the failed load of r@1", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Sync still waiting on a load vLLM never answers")
	}
	if got, _ := f.Model("r"); got == "r@1" {
		t.Errorf(`Model("r") = r@1 though its load was never answered`)
	}
}

// redoStep writes DIR/run/step-N again as hone-train does when a run is
// redone (latest moved back, training again): a new folder with config
// revision tag (and weights, "" for a whole file) renamed over the old one,
// its files modified at at (ahead of the first write, whatever the file
// system's time granularity), and latest pointed at it.
func redoStep(t *testing.T, dir, run string, step int, tag, weights string, at time.Time) string {
	t.Helper()
	name := fmt.Sprintf("step-%06d", step)
	p := filepath.Join(dir, run, name)
	tmp, err := os.MkdirTemp(filepath.Join(dir, run), "."+name+".tmp")
	if err != nil {
		t.Fatal(err)
	}
	if weights == "" {
		weights = "\x08\x00\x00\x00\x00\x00\x00\x00{}      "
	}
	files := map[string]string{
		"adapter_config.json":       `{"r":8,"lora_alpha":16,"target_modules":["q_proj"],"peft_type":"LORA","revision":"` + tag + `"}`,
		"adapter_model.safetensors": weights,
	}
	for f, b := range files {
		if err := os.WriteFile(filepath.Join(tmp, f), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(filepath.Join(tmp, f), at, at); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(tmp, at, at); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	setLatest(t, dir, run, step)
	return p
}

func setLatest(t *testing.T, dir, run string, step int) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, run, "latest"), []byte(fmt.Sprintf("step-%06d\n", step)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// probeModels makes the fake note, at each LoRA call, what "<run>" maps to
// and whether "<run>@<step>" resolves, as a request arriving then would see.
func probeModels(fake *fakeVLLM, f *Front, run string, step int) {
	fake.mu.Lock()
	defer fake.mu.Unlock()
	fake.probe = func() string {
		to, _ := f.Model(run)
		_, ok := f.Model(runfolder.ServedName(run, step))
		return fmt.Sprintf("%s→%s %s:%v", run, to, runfolder.ServedName(run, step), ok)
	}
}

func wantModel(t *testing.T, f *Front, name, want string) {
	t.Helper()
	if got, ok := f.Model(name); !ok || got != want {
		t.Fatalf("Model(%q) = %q, %v; want %q", name, got, ok, want)
	}
}

// TestSyncReloadsRedoneStep: a run redone from an earlier step writes a
// step folder vLLM still holds under "<run>@<step>" again, with new
// weights. The front unloads that version and loads the new folder under
// the same name (vLLM refuses a second load of a loaded name), while
// "<run>" stays on the previous step until the load succeeded, and
// "<run>@<step>" resolves to nothing in between; then "<run>" maps to the
// new weights, and an unchanged folder is not loaded again.
func TestSyncReloadsRedoneStep(t *testing.T) {
	fake, f, dir := newFixture(t, Options{KeepAdapters: 2})
	ctx := context.Background()
	p := syncSteps(t, f, dir, "r", 3)
	fake.takeCalls()
	// The operator moves latest back to step 2 and trains again.
	setLatest(t, dir, "r", 2)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls()) // step 2 is loaded and unchanged
	wantModel(t, f, "r", "r@2")
	probeModels(fake, f, "r", 3)
	if got := redoStep(t, dir, "r", 3, "redo", "", time.Now().Add(time.Hour)); got != p[3] {
		t.Fatalf("redone step at %s, want %s", got, p[3])
	}
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls(), unload("r@3"), load("r@3", p[3]))
	if got, want := fake.takeProbed(), []string{"r→r@2 r@3:false", "r→r@2 r@3:false"}; !slices.Equal(got, want) {
		t.Fatalf("while r@3 was reloaded, requests saw %q; want %q", got, want)
	}
	wantModel(t, f, "r", "r@3")
	wantModel(t, f, "r@3", "r@3")
	if got := fake.readFrom("r@3"); !strings.Contains(got, `"revision":"redo"`) {
		t.Fatalf("vLLM holds r@3 from %s; want the redone folder", got)
	}
	if got := f.Loaded(); !slices.Equal(got, []string{"r@2", "r@3"}) {
		t.Fatalf("Loaded = %v, want r@2 r@3", got)
	}
	for range 2 {
		if err := f.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	wantCalls(t, fake.takeCalls()) // the new folder is loaded: nothing to do
}

// TestSyncReloadsReplacedCurrentStep: the step "<run>" maps to is written
// again between two Syncs (the whole redo happened in between). While it
// is reloaded, "<run>" maps to the most recently current other version
// whose folder is unchanged; with none, "<run>" goes to vLLM as it is.
func TestSyncReloadsReplacedCurrentStep(t *testing.T) {
	fake, f, dir := newFixture(t, Options{KeepAdapters: 2})
	ctx := context.Background()
	p := syncSteps(t, f, dir, "r", 2)
	fake.takeCalls()
	probeModels(fake, f, "r", 2)
	at := time.Now().Add(time.Hour)
	redoStep(t, dir, "r", 2, "redo1", "", at)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls(), unload("r@2"), load("r@2", p[2]))
	if got, want := fake.takeProbed(), []string{"r→r@1 r@2:false", "r→r@1 r@2:false"}; !slices.Equal(got, want) {
		t.Fatalf("while r@2 was reloaded, requests saw %q; want %q", got, want)
	}
	wantModel(t, f, "r", "r@2")
	if got := fake.readFrom("r@2"); !strings.Contains(got, `"revision":"redo1"`) {
		t.Fatalf("vLLM holds r@2 from %s; want the redone folder", got)
	}
	// Both steps written again: step 1 is no version to fall back on.
	redoStep(t, dir, "r", 1, "redo2", "", at.Add(time.Hour))
	redoStep(t, dir, "r", 2, "redo2", "", at.Add(time.Hour))
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls(), unload("r@2"), load("r@2", p[2]))
	if got, want := fake.takeProbed(), []string{"r→r r@2:false", "r→r r@2:false"}; !slices.Equal(got, want) {
		t.Fatalf("while r@2 was reloaded, requests saw %q; want %q", got, want)
	}
	wantModel(t, f, "r", "r@2")
	if got := fake.readFrom("r@2"); !strings.Contains(got, `"revision":"redo2"`) {
		t.Fatalf("vLLM holds r@2 from %s; want the redone folder", got)
	}
}

// TestSyncRedoneStepFailures: reloading a redone step keeps the rules of a
// load. An unload vLLM fails leaves everything as it was and is tried
// again at the next Sync, reported once; a load vLLM refuses leaves
// "<run>" on the previous step and is not tried again until the folder
// changes; a redone folder refused before vLLM sees it leaves the version
// vLLM holds serving, as the embedded server keeps the loaded step.
func TestSyncRedoneStepFailures(t *testing.T) {
	fake, f, dir := newFixture(t, Options{KeepAdapters: 2})
	ctx := context.Background()
	p := syncSteps(t, f, dir, "r", 3)
	setLatest(t, dir, "r", 2)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	fake.takeCalls()
	at := time.Now().Add(time.Hour)

	fake.mu.Lock()
	fake.failUnload = map[string]int{"r@3": 500}
	fake.mu.Unlock()
	redoStep(t, dir, "r", 3, "redo1", "", at)
	err := f.Sync(ctx)
	if err == nil || !strings.Contains(err.Error(), "r@3") || !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), "still serving r@2") {
		t.Fatalf("Sync with the unload failing: %v; want the failed unload of r@3", err)
	}
	wantCalls(t, fake.takeCalls(), unload("r@3"))
	wantModel(t, f, "r", "r@2")
	if got := f.Loaded(); !slices.Equal(got, []string{"r@2", "r@3"}) {
		t.Fatalf("Loaded = %v after a failed unload, want r@2 r@3 as before", got)
	}
	if err := f.Sync(ctx); err != nil {
		t.Fatalf("second Sync with the unload still failing: %v; want it reported once", err)
	}
	wantCalls(t, fake.takeCalls(), unload("r@3")) // tried again

	fake.mu.Lock()
	fake.failUnload = nil
	fake.failOn["r@3"] = 400
	fake.mu.Unlock()
	err = f.Sync(ctx)
	if err == nil || !strings.Contains(err.Error(), "still serving r@2") || !strings.Contains(err.Error(), "400") {
		t.Fatalf("Sync with the load refused: %v; want the refusal, naming r@2 as still serving", err)
	}
	wantCalls(t, fake.takeCalls(), unload("r@3"), load("r@3", p[3]))
	wantModel(t, f, "r", "r@2")
	if _, ok := f.Model("r@3"); ok {
		t.Fatal("r@3 resolves though vLLM refused its new folder")
	}
	if err := f.Sync(ctx); err != nil {
		t.Fatalf("Sync of the unchanged refused folder: %v", err)
	}
	wantCalls(t, fake.takeCalls())

	fake.mu.Lock()
	delete(fake.failOn, "r@3")
	fake.mu.Unlock()
	redoStep(t, dir, "r", 3, "redo2", "", at.Add(time.Hour))
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls(), load("r@3", p[3]))
	wantModel(t, f, "r", "r@3")
	if got := fake.readFrom("r@3"); !strings.Contains(got, `"revision":"redo2"`) {
		t.Fatalf("vLLM holds r@3 from %s; want the folder written last", got)
	}

	redoStep(t, dir, "r", 3, "bad", "x", at.Add(2*time.Hour))
	if err := f.Sync(ctx); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("Sync of a redone folder with truncated weights: %v", err)
	}
	if err := f.Sync(ctx); err != nil {
		t.Fatalf("second Sync of the unchanged bad folder: %v", err)
	}
	wantCalls(t, fake.takeCalls()) // vLLM never asked
	wantModel(t, f, "r", "r@3")
}

// syncSteps writes steps 1 to n of run, Syncing after each, as hone-train
// writes them and the front follows; p[k] is step k's folder.
func syncSteps(t *testing.T, f *Front, dir, run string, n int) []string {
	t.Helper()
	p := make([]string, n+1)
	for k := 1; k <= n; k++ {
		p[k] = writeStep(t, dir, run, k)
		if err := f.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// TestSyncRetriesUnloadBehindRefusedStep: an unload that failed is tried
// again at the next Sync even while the current step is one vLLM refused
// and that is not tried again: the old version does not stay loaded beyond
// KeepAdapters until the next new step.
func TestSyncRetriesUnloadBehindRefusedStep(t *testing.T) {
	fake, f, dir := newFixture(t, Options{KeepAdapters: 1})
	ctx := context.Background()
	p1 := writeStep(t, dir, "r", 1)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls(), load("r@1", p1))
	fake.failUnload = map[string]int{"r@1": 500}
	p2 := writeStep(t, dir, "r", 2)
	if err := f.Sync(ctx); err == nil || !strings.Contains(err.Error(), "unloading r@1") {
		t.Fatalf("Sync with a failing unload: %v", err)
	}
	wantCalls(t, fake.takeCalls(), load("r@2", p2), unload("r@1"))
	fake.failOn["r@3"] = 400
	p3 := writeStep(t, dir, "r", 3)
	if err := f.Sync(ctx); err == nil || !strings.Contains(err.Error(), "loading r@3") {
		t.Fatalf("Sync of a refused step: %v", err)
	}
	wantCalls(t, fake.takeCalls(), load("r@3", p3), unload("r@1"))
	fake.mu.Lock()
	fake.failUnload = nil
	fake.mu.Unlock()
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls(), unload("r@1")) // r@3 not tried again; r@1 is
	if got := f.Loaded(); !slices.Equal(got, []string{"r@2"}) {
		t.Fatalf("Loaded = %v, want r@2", got)
	}
	if got, _ := f.Model("r"); got != "r@2" {
		t.Fatalf(`Model("r") = %q, want r@2 (still serving)`, got)
	}
}

// TestSyncRetriesLoadAnswered5xx: vLLM refuses a folder with 400 or 404;
// a 5xx is no refusal (a gateway before a vLLM that is restarting: 502,
// 503, 504; vLLM's 500 as its engine dies), so the load is tried again at
// the next Sync, reported once, as a load with no answer is. It used to be
// taken for a refusal and not tried again until the trainer rewrote the
// folder: the newest step was never served.
func TestSyncRetriesLoadAnswered5xx(t *testing.T) {
	for _, st := range []int{500, 502, 503, 504} {
		fake, f, dir := newFixture(t, Options{})
		ctx := context.Background()
		p1 := writeStep(t, dir, "r", 1)
		if err := f.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		fake.failOn["r@2"] = st
		p2 := writeStep(t, dir, "r", 2)
		if err := f.Sync(ctx); err == nil || !strings.Contains(err.Error(), "still serving r@1") {
			t.Fatalf("%d: Sync with the load failing: %v", st, err)
		}
		if err := f.Sync(ctx); err != nil {
			t.Fatalf("%d: second Sync: %v, want the failure reported once", st, err)
		}
		wantCalls(t, fake.takeCalls(), load("r@1", p1), load("r@2", p2), load("r@2", p2))
		delete(fake.failOn, "r@2")
		if err := f.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		wantCalls(t, fake.takeCalls(), load("r@2", p2))
		wantModel(t, f, "r", "r@2")
	}
}

package vllm

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/waitfor"
)

// swapRun makes a new run folder for run beside the old one, with steps
// made (each step-N with config revision tag), latest at latest, and
// swaps it in whole, as hone-serve's copy of a run published anew is
// replaced (format/runfolder replaceRun): the run folder is another, its
// step folders written anew. It returns each new step's folder by step.
func swapRun(t *testing.T, dir, run, tag string, latest int, steps ...int) map[int]string {
	t.Helper()
	fresh := filepath.Join(dir, "."+run+".tmp-new")
	writeRun(t, fresh, tag, latest, steps...)
	old := filepath.Join(dir, "."+run+".tmp-old")
	if err := os.Rename(filepath.Join(dir, run), old); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(fresh, filepath.Join(dir, run)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(old); err != nil {
		t.Fatal(err)
	}
	p := map[int]string{}
	for _, n := range steps {
		p[n] = filepath.Join(dir, run, fmt.Sprintf("step-%06d", n))
	}
	return p
}

// writeRun writes a run folder at runDir with steps (each step-N with
// config revision tag, its times an hour ahead of the old folders') and
// latest at latest.
func writeRun(t *testing.T, runDir, tag string, latest int, steps ...int) {
	t.Helper()
	at := time.Now().Add(time.Hour) // ahead of the old folders' times
	for _, n := range steps {
		d := filepath.Join(runDir, fmt.Sprintf("step-%06d", n))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		files := map[string]string{
			"adapter_config.json":       `{"r":8,"lora_alpha":16,"target_modules":["q_proj"],"peft_type":"LORA","revision":"` + tag + `"}`,
			"adapter_model.safetensors": "\x08\x00\x00\x00\x00\x00\x00\x00{}      ",
		}
		for f, b := range files {
			if err := os.WriteFile(filepath.Join(d, f), []byte(b), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(filepath.Join(d, f), at, at); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chtimes(d, at, at); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(runDir, "latest"), []byte(fmt.Sprintf("step-%06d\n", latest)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSyncReplacedRunUnloadsOldSteps: a run folder deleted and made anew
// (hone-serve's copy of a run published anew, swapped in whole) holds
// another run. Only the current step was checked, so the old run's steps
// that vLLM held stayed loaded under "<run>@<step>" until KeepAdapters
// pushed them out: the old run's step 3, which the new run has not
// reached, was served as the run's. The old run's kept steps are unloaded
// before the new current step loads, the old current one after it, so
// that "<run>" answers throughout; and a step number the new run has
// too is loaded from the new folder, never served from the old one.
func TestSyncReplacedRunUnloadsOldSteps(t *testing.T) {
	t.Run("new run behind", func(t *testing.T) {
		fake, f, dir := newFixture(t, Options{KeepAdapters: 3})
		ctx := context.Background()
		syncSteps(t, f, dir, "r", 3)
		fake.takeCalls()
		probeModels(fake, f, "r", 2)
		p := swapRun(t, dir, "r", "anew", 1, 1, 2)
		if err := f.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		wantCalls(t, fake.takeCalls(), unload("r@1"), unload("r@2"), load("r@1", p[1]), unload("r@3"))
		if got, want := fake.takeProbed(), []string{"r→r@3 r@2:false", "r→r@3 r@2:false", "r→r@3 r@2:false", "r→r@1 r@2:false"}; !slices.Equal(got, want) {
			t.Fatalf("while the run was replaced, requests saw %q; want %q", got, want)
		}
		if got := f.Loaded(); !slices.Equal(got, []string{"r@1"}) {
			t.Fatalf("Loaded = %v, want r@1", got)
		}
		if got := fake.readFrom("r@1"); !strings.Contains(got, `"revision":"anew"`) {
			t.Fatalf("vLLM holds r@1 from %s; want the new run's folder", got)
		}
		setLatest(t, dir, "r", 2)
		if err := f.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		wantCalls(t, fake.takeCalls(), load("r@2", p[2]))
		if got := fake.readFrom("r@2"); !strings.Contains(got, `"revision":"anew"`) {
			t.Fatalf("vLLM holds r@2 from %s; want the new run's folder", got)
		}
	})
	t.Run("new current step was kept loaded", func(t *testing.T) {
		fake, f, dir := newFixture(t, Options{KeepAdapters: 3})
		ctx := context.Background()
		syncSteps(t, f, dir, "r", 3)
		fake.takeCalls()
		probeModels(fake, f, "r", 2)
		p := swapRun(t, dir, "r", "anew", 2, 1, 2)
		if err := f.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		wantCalls(t, fake.takeCalls(), unload("r@1"), unload("r@2"), load("r@2", p[2]), unload("r@3"))
		if got, want := fake.takeProbed(), []string{"r→r@3 r@2:false", "r→r@3 r@2:false", "r→r@3 r@2:false", "r→r@2 r@2:true"}; !slices.Equal(got, want) {
			t.Fatalf("while the run was replaced, requests saw %q; want %q", got, want)
		}
		wantModel(t, f, "r", "r@2")
		if got := fake.readFrom("r@2"); !strings.Contains(got, `"revision":"anew"`) {
			t.Fatalf("vLLM holds r@2 from %s; want the new run's folder", got)
		}
		if got := f.Loaded(); !slices.Equal(got, []string{"r@2"}) {
			t.Fatalf("Loaded = %v, want r@2", got)
		}
	})
	t.Run("old step in use", func(t *testing.T) {
		// A request in flight on the old run's step 2 keeps that version
		// in vLLM until it ends (vLLM would cut its stream), but no new
		// request resolves to it; then the new run's step 2 is loaded.
		fake, f, dir := newFixture(t, Options{KeepAdapters: 3})
		srv := httptest.NewServer(f)
		t.Cleanup(srv.Close)
		ctx := context.Background()
		syncSteps(t, f, dir, "r", 3)
		fake.takeCalls()
		end := heldStream(t, fake, srv, "r@2", "r@2")
		p := swapRun(t, dir, "r", "anew", 2, 1, 2)
		if err := f.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		wantCalls(t, fake.takeCalls(), unload("r@1"))
		wantModel(t, f, "r", "r@3") // the old current answers until the new one loads
		if got, ok := f.Model("r@2"); ok {
			t.Fatalf("Model(r@2) = %q while vLLM holds the old run's r@2", got)
		}
		end()
		waitfor.Until(t, 10*time.Second, "the new run's r@2 loaded once the old one's request ended", func() bool {
			if err := f.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			return strings.Contains(fake.readFrom("r@2"), `"revision":"anew"`)
		})
		wantCalls(t, fake.takeCalls(), unload("r@2"), load("r@2", p[2]), unload("r@3"))
		wantModel(t, f, "r", "r@2")
		if got := f.Loaded(); !slices.Equal(got, []string{"r@2"}) {
			t.Fatalf("Loaded = %v, want r@2", got)
		}
	})
}

// TestSyncReplacedRunWithNoStepYet: a run deleted and trained again under
// its name has a run folder before its first step. Until that step, Sync
// stopped at "no step yet" before looking at the old run's versions, so
// vLLM went on serving the deleted run's kept step 2 as "r@2" for as
// long as the new run's first step took; the embedded server drops them
// at once (serve/adapters). "r" keeps the old current step, as while a
// new step loads.
func TestSyncReplacedRunWithNoStepYet(t *testing.T) {
	fake, f, dir := newFixture(t, Options{KeepAdapters: 3})
	ctx := context.Background()
	syncSteps(t, f, dir, "r", 3)
	fake.takeCalls()
	// Made before the old one is deleted, so that it is another folder
	// (ext4 gives a folder made after the delete the old one's inode).
	if err := os.Mkdir(filepath.Join(dir, "r.new"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "r"), filepath.Join(dir, "r.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "r.new"), filepath.Join(dir, "r")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "r.old")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls(), unload("r@1"), unload("r@2"))
	if got, ok := f.Model("r@2"); ok {
		t.Fatalf("Model(r@2) = %q after its run folder was deleted and made anew", got)
	}
	wantModel(t, f, "r", "r@3")
}

// TestSyncRunDeletedAndMadeAgain: a run deleted (rm -rf) and trained
// again under its name has a run folder made after the old one went, and
// ext4 gives it the old folder's inode: os.SameFile took it for the old
// folder, so the old run's step 3, which the new run has not reached,
// stayed loaded as "r@3". The folder's birth time tells them apart
// (runfolder.FolderID).
func TestSyncRunDeletedAndMadeAgain(t *testing.T) {
	fake, f, dir := newFixture(t, Options{KeepAdapters: 3})
	ctx := context.Background()
	syncSteps(t, f, dir, "r", 3)
	fake.takeCalls()
	if err := os.RemoveAll(filepath.Join(dir, "r")); err != nil {
		t.Fatal(err)
	}
	writeRun(t, filepath.Join(dir, "r"), "anew", 1, 1)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got, ok := f.Model("r@3"); ok {
		t.Fatalf("Model(r@3) = %q: the deleted run's step 3 is still served", got)
	}
	if got := f.Loaded(); !slices.Equal(got, []string{"r@1"}) {
		t.Fatalf("Loaded = %v, want r@1", got)
	}
}

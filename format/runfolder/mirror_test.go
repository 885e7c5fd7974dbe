package runfolder

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func writeStepFiles(t *testing.T, run string, n int, files ...string) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(run, StepName(n), f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f+" of "+StepName(n)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Publish copies the steps up to latest (not a step latest does not name
// yet) and the run's files, not its lock, latest last; Pull copies them
// back, newest first when asked, skipping files, and a second call with
// nothing new copies nothing. Both sides are plain folders here; the
// object-store side is tested with the commands (hone-train, hone-serve).
func TestPublishPull(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	train, store, serve := filepath.Join(dir, "train", "r"), filepath.Join(dir, "store", "r"), filepath.Join(dir, "serve", "r")
	writeStepFiles(t, train, 1, "adapter_model.safetensors", "optimizer.safetensors")
	writeStepFiles(t, train, 2, "adapter_model.safetensors", "optimizer.safetensors")
	writeStepFiles(t, train, 3, "adapter_model.safetensors") // being written: latest is 2
	for name, text := range map[string]string{"metrics.jsonl": "{}\n", "lock": "pid"} {
		if err := os.WriteFile(filepath.Join(train, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := Publish(ctx, train, store); err != nil || got != nil {
		t.Fatalf("a run without latest published %v, %v", got, err)
	}
	if err := WritePointer(train, LatestName, 2); err != nil {
		t.Fatal(err)
	}
	if got, err := Publish(ctx, train, store); err != nil || !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("published %v, %v; want [1 2]", got, err)
	}
	if _, err := os.Stat(filepath.Join(store, StepName(3))); err == nil {
		t.Error("a step newer than latest was published")
	}
	if _, err := os.Stat(filepath.Join(store, "lock")); err == nil {
		t.Error("the lock was published")
	}
	if s, ok, err := ReadPointer(store, LatestName); err != nil || !ok || s.N != 2 {
		t.Errorf("published latest %v %v %v", s, ok, err)
	}
	if got, err := Publish(ctx, train, store); err != nil || got != nil {
		t.Errorf("publishing again copied %v, %v", got, err)
	}
	// A store that another trainer moved to step 5 is not moved back.
	if err := WritePointer(store, LatestName, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := Publish(ctx, train, store); err != nil {
		t.Fatal(err)
	}
	if s, _, _ := ReadPointer(store, LatestName); s.N != 5 {
		t.Errorf("publishing an older run moved the store's latest to %d", s.N)
	}
	if err := WritePointer(store, LatestName, 2); err != nil {
		t.Fatal(err)
	}

	skip := func(n string) bool { return n == "optimizer.safetensors" }
	got, err := Pull(ctx, store, serve, PullOptions{Skip: skip, Newest: 1})
	if err != nil || !slices.Equal(got, []int{2}) {
		t.Fatalf("pulled %v, %v; want [2]", got, err)
	}
	b, err := os.ReadFile(filepath.Join(serve, StepName(2), "adapter_model.safetensors"))
	if err != nil || string(b) != "adapter_model.safetensors of step-000002" {
		t.Errorf("pulled step 2 holds %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(serve, StepName(2), "optimizer.safetensors")); err == nil {
		t.Error("a skipped file was pulled")
	}
	if _, err := os.Stat(filepath.Join(serve, MetricsName)); err != nil {
		t.Errorf("metrics not pulled: %v", err)
	}
	if got, err := Pull(ctx, store, serve, PullOptions{}); err != nil || got != nil {
		t.Errorf("pulling again copied %v, %v", got, err)
	}
	ents, _ := os.ReadDir(serve)
	for _, e := range ents {
		if IsTemp(e.Name()) {
			t.Errorf("a temporary folder is left: %s", e.Name())
		}
	}
	if got, err := Pull(ctx, filepath.Join(dir, "store", "none"), filepath.Join(dir, "serve", "none"), PullOptions{}); err != nil || got != nil {
		t.Errorf("pulling a run that is not there: %v, %v", got, err)
	}
}

// A reader of the pulled copy (serve's watcher, the vLLM front) that
// looks while Pull runs finds as current only what latest named before or
// names after: into a copy without latest the newest step is renamed
// first, so the highest step folder is never an older step mid-pull.
func TestPullNewestFirst(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, serveRoot := filepath.Join(dir, "store", "r"), filepath.Join(dir, "serve")
	for _, n := range []int{1, 2, 3, 9, 10} {
		writeStepFiles(t, store, n, "adapter_config.json", "adapter_model.safetensors")
	}
	// Steps go by number, not by name: "step-3" sorts after "step-000010".
	if err := os.Rename(filepath.Join(store, StepName(3)), filepath.Join(store, "step-3")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		latest, newest int
		want           []int // steps copied
		seen           []int // current steps a reader may find while it runs (-1: none)
	}{
		{latest: 2, want: []int{1, 2}, seen: []int{-1, 2}},
		{latest: 10, newest: 2, want: []int{9, 10}, seen: []int{2}},
	} {
		if err := WritePointer(store, LatestName, c.latest); err != nil {
			t.Fatal(err)
		}
		var bad []int
		look := func(string) bool {
			cur, err := Locate(serveRoot, "r")
			n := cur.N
			if err != nil {
				n = -1
			}
			if !slices.Contains(c.seen, n) && n != c.latest {
				bad = append(bad, n)
			}
			return false
		}
		got, err := Pull(ctx, store, filepath.Join(serveRoot, "r"), PullOptions{Skip: look, Newest: c.newest})
		if err != nil || !slices.Equal(got, c.want) {
			t.Fatalf("latest %d: pulled %v, %v; want %v", c.latest, got, err, c.want)
		}
		if bad != nil {
			t.Errorf("latest %d: a reader found steps %v current while Pull ran", c.latest, bad)
		}
		if cur, err := Locate(serveRoot, "r"); err != nil || cur.N != c.latest {
			t.Errorf("latest %d: after Pull the current step is %v, %v", c.latest, cur, err)
		}
	}
}

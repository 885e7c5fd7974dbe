package runfolder

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"gocloud.dev/blob"

	"github.com/hone-rl/hone/format/fileset"
)

// A follower (hone-serve's Pull) reads the store's latest, then lists its
// steps. A trainer that publishes a newer step in between moves latest on
// and deletes the step the follower read latest at (--keep-last 1). Before,
// Pull then found no step to copy and pointed the local latest at the step
// it had read, which the copy does not hold: serve's Locate failed with
// "latest names step-000001, which does not exist" until the next step.
func TestPullLatestPrunedBeforeList(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	files := []string{"adapter_config.json", "adapter_model.safetensors"}
	var fired atomic.Bool
	var store string
	url := hookedS3Requests(t, "bkt", func(method, p string) {
		if method != http.MethodGet || (p != "/bkt" && p != "/bkt/") {
			return // not a listing
		}
		if !fired.CompareAndSwap(false, true) {
			return // the first listing only (the trainer's own among the later)
		}
		{
			// The trainer publishes step 2 and prunes step 1.
			for _, f := range files {
				if err := fileset.WriteFile(ctx, fileset.Join(store, StepName(2), f), []byte(f)); err != nil {
					t.Error(err)
				}
			}
			if err := fileset.WriteFile(ctx, fileset.Join(store, LatestName), []byte(StepName(2)+"\n")); err != nil {
				t.Error(err)
			}
			if err := fileset.RemoveAll(ctx, fileset.Join(store, StepName(1))); err != nil {
				t.Error(err)
			}
		}
	})
	store = url("adapters/r")
	for _, f := range files {
		if err := fileset.WriteFile(ctx, fileset.Join(store, StepName(1), f), []byte(f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := fileset.WriteFile(ctx, fileset.Join(store, LatestName), []byte(StepName(1)+"\n")); err != nil {
		t.Fatal(err)
	}
	serveRoot := filepath.Join(dir, "serve")
	serve := filepath.Join(serveRoot, "r")
	check := func(what string) {
		t.Helper()
		s, ok, err := ReadPointer(serve, LatestName)
		if err != nil || !ok {
			return // no latest yet is fine
		}
		for _, f := range files {
			if _, err := os.Stat(filepath.Join(serve, s.Name, f)); err != nil {
				t.Errorf("%s: the copy's latest names %s, which lacks %s: %v", what, s.Name, f, err)
			}
		}
	}
	Pull(ctx, store, serve, PullOptions{}) // may fail; the next pull goes on
	check("after a pull that raced a publish")
	if _, err := Pull(ctx, store, serve, PullOptions{}); err != nil {
		t.Fatalf("pull again: %v", err)
	}
	check("after the next pull")
	if cur, err := Locate(serveRoot, "r"); err != nil || cur.N != 2 {
		t.Errorf("after the next pull the current step is %+v, %v; want step 2", cur, err)
	}
}

// A step the trainer prunes from the store after Pull listed it and before
// Pull copied it is not copied as an empty step folder. Before, the
// listing of its gone prefix came back empty, and Pull renamed an empty
// folder into the copy and reported the step pulled.
func TestPullStepPrunedBeforeCopy(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	files := []string{"adapter_config.json", "adapter_model.safetensors"}
	url := hookedS3Requests(t, "bkt", func(string, string) {})
	store := url("adapters/r")
	for _, n := range []int{1, 2} {
		for _, f := range files {
			if err := fileset.WriteFile(ctx, fileset.Join(store, StepName(n), f), []byte(f)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := fileset.WriteFile(ctx, fileset.Join(store, LatestName), []byte(StepName(2)+"\n")); err != nil {
		t.Fatal(err)
	}
	var fired atomic.Bool
	prune := func(string) bool {
		// Steps go newest first: while step 2 is copied, the trainer
		// prunes step 1 from the store.
		if fired.CompareAndSwap(false, true) {
			if err := fileset.RemoveAll(ctx, fileset.Join(store, StepName(1))); err != nil {
				t.Error(err)
			}
		}
		return false
	}
	serve := filepath.Join(dir, "serve", "r")
	got, _ := Pull(ctx, store, serve, PullOptions{Skip: prune}) // may fail
	for _, n := range got {
		for _, f := range files {
			if _, err := os.Stat(filepath.Join(serve, StepName(n), f)); err != nil {
				t.Errorf("Pull reported step %d pulled, and its copy lacks %s", n, f)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(serve, StepName(1))); err == nil {
		t.Errorf("a step pruned from the store before it was copied is in the copy: %v", entries(t, filepath.Join(serve, StepName(1))))
	}
}

// A file of the run folder whose name holds a character a URL reads
// otherwise ("%", "#", "?") is published and pulled under its own name.
// Before, Publish joined the name into the URL as it was, so "50%.txt"
// made no URL ("invalid URL escape") and every later Publish of the run
// failed; and Pull named the copy by the escaped form ("50%25.txt").
func TestPublishPullFileNamesWithURLCharacters(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	train := filepath.Join(dir, "train", "r")
	names := []string{"notes 50%.txt", "a#1.json", "q?.txt", "plain+é.txt"}
	writeStepFiles(t, train, 1, append([]string{"adapter_config.json"}, names...)...)
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(train, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := WritePointer(train, LatestName, 1); err != nil {
		t.Fatal(err)
	}
	url := hookedS3Requests(t, "bkt", func(string, string) {})
	store := url("adapters/r")
	if got, err := Publish(ctx, train, store); err != nil || len(got) != 1 {
		t.Fatalf("publish: %v, %v", got, err)
	}
	serve := filepath.Join(dir, "serve", "r")
	if got, err := Pull(ctx, store, serve, PullOptions{}); err != nil || len(got) != 1 {
		t.Fatalf("pull: %v, %v", got, err)
	}
	for _, n := range names {
		if b, err := os.ReadFile(filepath.Join(serve, n)); err != nil || string(b) != n {
			t.Errorf("run file %q pulled as %q, %v (the copy holds %q)", n, b, err, entries(t, serve))
		}
		if _, err := os.Stat(filepath.Join(serve, StepName(1), n)); err != nil {
			t.Errorf("step file %q not pulled: the step holds %q", n, entries(t, filepath.Join(serve, StepName(1))))
		}
	}
}

// A run folder whose folders were made in the AWS console (or by s3fs,
// rclone, MinIO's console) holds an empty object for each, its folder
// marker ("adapters/r/", "adapters/r/step-000001/"). Pull copies the run
// around them. Before, it took the markers for files of the run and of
// the step, whose names do not open, and failed every time: "names a
// folder; name an object".
func TestPullFolderMarkers(t *testing.T) {
	ctx := context.Background()
	url := hookedS3Requests(t, "bkt", func(string, string) {})
	b, err := blob.OpenBucket(ctx, strings.Replace(url(""), "/?", "?", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, k := range []string{"adapters/", "adapters/r/", "adapters/r/" + StepName(1) + "/"} {
		if err := b.WriteAll(ctx, k, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	store := url("adapters/r")
	for name, data := range map[string]string{
		fileset.Join(store, StepName(1), "adapter_config.json"): "{}",
		fileset.Join(store, "metrics.jsonl"):                    "{}\n",
		fileset.Join(store, LatestName):                         StepName(1) + "\n",
	} {
		if err := fileset.WriteFile(ctx, name, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	serve := filepath.Join(t.TempDir(), "r")
	if got, err := Pull(ctx, store, serve, PullOptions{}); err != nil || len(got) != 1 {
		t.Fatalf("pull: %v, %v", got, err)
	}
	for _, f := range []string{"metrics.jsonl", filepath.Join(StepName(1), "adapter_config.json")} {
		if _, err := os.Stat(filepath.Join(serve, f)); err != nil {
			t.Errorf("%s not pulled: %v", f, err)
		}
	}
}

// A store whose latest names a step it does not hold, and goes on naming
// it (a publish cut short, a folder removed by hand), is not the race a
// second pull gets past: the error says the store is broken and what to
// do, where it said "pruned by a newer publish; pull again" forever.
func TestPullLatestNamesStepStoreLacks(t *testing.T) {
	ctx := context.Background()
	url := hookedS3Requests(t, "bkt", func(string, string) {})
	store := url("adapters/r")
	writeLatestPastSteps(t, ctx, store)
	_, err := Pull(ctx, store, filepath.Join(t.TempDir(), "r"), PullOptions{})
	if err == nil {
		t.Fatal("pull of a store whose latest names a missing step succeeded")
	}
	for _, want := range []string{StepName(2), "does not hold", "cut short"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "pull again") {
		t.Errorf("error %q tells to pull again, which cannot help", err)
	}
}

// writeLatestPastSteps writes a run folder at store that holds step 1
// while its latest names step 2.
func writeLatestPastSteps(t *testing.T, ctx context.Context, store string) {
	t.Helper()
	if err := fileset.WriteFile(ctx, fileset.Join(store, StepName(1), "adapter_config.json"), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if err := fileset.WriteFile(ctx, fileset.Join(store, LatestName), []byte(StepName(2)+"\n")); err != nil {
		t.Fatal(err)
	}
}

// Pull's errors name the store's run folder and pointer as the user
// does, without the query that opens the bucket (endpoint=…): a latest
// naming a step the store lacks, a latest naming no step.
func TestPullErrorsNameStoreWithoutQuery(t *testing.T) {
	ctx := context.Background()
	url := hookedS3Requests(t, "bkt", func(string, string) {})
	check := func(what string, err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "endpoint=") {
			t.Errorf("%s: %v; want an error with %q and without the bucket query", what, err, want)
		}
	}
	store := url("adapters/r")
	writeLatestPastSteps(t, ctx, store)
	_, err := Pull(ctx, store, filepath.Join(t.TempDir(), "r"), PullOptions{})
	check("latest names a missing step", err, "pull s3://bkt/adapters/r: its latest names "+StepName(2))

	junk := url("adapters/j")
	if err := fileset.WriteFile(ctx, fileset.Join(junk, LatestName), []byte("junk\n")); err != nil {
		t.Fatal(err)
	}
	_, err = Pull(ctx, junk, filepath.Join(t.TempDir(), "j"), PullOptions{})
	check("latest names no step", err, `s3://bkt/adapters/j/latest names "junk"`)
}

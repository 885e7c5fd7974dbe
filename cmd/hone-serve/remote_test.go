package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/collect/openaitest"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/internal/fakes3d"
	"github.com/hone-rl/hone/internal/waitfor"
	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/train/model"
)

// hone-serve --adapters s3://… serves the steps published there (a real S3
// protocol server): a step published while it runs is pulled, whole, into
// --adapters-cache and loaded, without the optimizer state.
func TestAdaptersFromObjectStore(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	dir := t.TempDir()
	tiny := "../../serve/testdata/tiny"
	local := filepath.Join(dir, "train", "r1")
	publish := func(n int) { publishTestStep(t, tiny, local, s3.URL("hone", "adapters/r1"), n) }
	publish(1)
	cache := filepath.Join(dir, "cache")
	addr := openaitest.StartProcess(t, binary, "--model", tiny, "--port", "0", "--threads", "1",
		"--adapters", s3.URL("hone", "adapters"), "--adapters-cache", cache, "--poll-interval", "50ms")
	models := func() []string {
		resp, err := http.Get("http://" + addr + "/v1/models")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, d := range body.Data {
			ids = append(ids, d.ID)
		}
		return ids
	}
	waitFor := func(id string) {
		t.Helper()
		waitfor.Until(t, 20*time.Second, id+" served", func() bool { return slices.Contains(models(), id) })
	}
	waitFor("r1@1")
	publish(2)
	waitFor("r1@2")
	if _, err := os.Stat(filepath.Join(cache, "r1", "step-000002", "adapter_model.safetensors")); err != nil {
		t.Errorf("step 2 not in the cache: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cache, "r1", "step-000002", "optimizer.safetensors")); err == nil {
		t.Error("the optimizer state was pulled")
	}
}

// hone-serve --upstream (the vLLM front) --adapters s3://… pulls each step
// published there into --adapters-cache and has vLLM load it from that
// folder, as it does a local adapters folder: a step published while the
// front runs is loaded into the (fake) vLLM under its versioned name with
// the cached step's absolute path and without the optimizer state, and a
// step half published (files uploaded, the store's latest not yet moved)
// is neither pulled nor loaded.
func TestUpstreamAdaptersFromObjectStore(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	ctx := context.Background()
	s3 := fakes3d.StartTest(t, "hone")
	fake := &fakeVLLM{loaded: make(chan struct{}, 1)}
	up := httptest.NewServer(fake)
	defer up.Close()
	dir := t.TempDir()
	tiny := "../../serve/testdata/tiny"
	local := filepath.Join(dir, "train", "r1")
	remote := s3.URL("hone", "adapters/r1")
	writeStep := func(n int) {
		t.Helper()
		writeTestStep(t, tiny, local, n)
	}
	publish := func(n int) {
		t.Helper()
		writeStep(n)
		if err := runfolder.WritePointer(local, runfolder.LatestName, n); err != nil {
			t.Fatal(err)
		}
		if _, err := runfolder.Publish(ctx, local, remote); err != nil {
			t.Fatal(err)
		}
	}
	// halfPublish uploads step n's files as Publish does, but stops before
	// the store's latest moves (a trainer killed mid-publish).
	halfPublish := func(n int, files ...string) {
		t.Helper()
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(local, runfolder.StepName(n), f))
			if err != nil {
				t.Fatal(err)
			}
			if err := fileset.WriteFile(ctx, s3.URL("hone", "adapters/r1/"+runfolder.StepName(n)+"/"+f), b); err != nil {
				t.Fatal(err)
			}
		}
	}
	loads := func() []map[string]string {
		fake.mu.Lock()
		defer fake.mu.Unlock()
		return slices.Clone(fake.loads)
	}
	// pulls waits until the front has listed the store a few more times.
	pulls := func() {
		t.Helper()
		from := s3.Requests(http.MethodGet)
		waitfor.Until(t, 20*time.Second, "more pulls", func() bool { return s3.Requests(http.MethodGet) >= from+10 })
	}
	wantLoad := func(want ...int) {
		t.Helper()
		waitfor.Until(t, 20*time.Second, "vLLM asked to load the step", func() bool { return len(loads()) >= len(want) })
		got := loads()
		if len(got) != len(want) {
			t.Fatalf("load calls %v, want steps %v", got, want)
		}
		abs, err := filepath.Abs(cache(dir))
		if err != nil {
			t.Fatal(err)
		}
		for i, n := range want {
			path := filepath.Join(abs, "r1", runfolder.StepName(n))
			if got[i]["lora_name"] != runfolder.ServedName("r1", n) || got[i]["lora_path"] != path {
				t.Fatalf("load call %d is %v, want lora_name %s, lora_path %s", i, got[i], runfolder.ServedName("r1", n), path)
			}
			if _, err := os.Stat(filepath.Join(path, "adapter_model.safetensors")); err != nil {
				t.Errorf("the loaded step is not in the cache: %v", err)
			}
			if _, err := os.Stat(filepath.Join(path, "optimizer.safetensors")); err == nil {
				t.Errorf("step %d's optimizer state was pulled", n)
			}
		}
	}
	notCached := func(n int) {
		t.Helper()
		if _, err := os.Stat(filepath.Join(cache(dir), "r1", runfolder.StepName(n))); err == nil {
			t.Fatalf("half-published step %d was pulled into the cache", n)
		}
	}

	// Before the front starts, step 1 is half published and nothing is
	// whole in the store yet.
	writeStep(1)
	halfPublish(1, "adapter_config.json")
	addr := openaitest.StartProcess(t, binary, "--upstream", up.URL, "--port", "0",
		"--adapters", s3.URL("hone", "adapters"), "--adapters-cache", cache(dir), "--poll-interval", "50ms")
	pulls()
	notCached(1)
	if got := loads(); len(got) != 0 {
		t.Fatalf("vLLM was asked to load %v before any step was published whole", got)
	}

	// Step 1 is dropped, as --keep-last would: Publish moves the store's
	// latest after each whole step, and a poll between steps 1 and 2
	// would load r1@1 as well, which is right but not this test's point.
	if err := os.RemoveAll(filepath.Join(local, runfolder.StepName(1))); err != nil {
		t.Fatal(err)
	}
	publish(2)
	wantLoad(2)

	writeStep(3)
	halfPublish(3, "adapter_config.json", "adapter_model.safetensors")
	pulls()
	notCached(3)
	if err := os.RemoveAll(filepath.Join(local, runfolder.StepName(3))); err != nil {
		t.Fatal(err)
	}
	publish(4)
	wantLoad(2, 4)

	// "r1" now reaches vLLM as the step pulled last.
	var got string
	if !waitfor.Within(10*time.Second, func() bool {
		resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"r1","messages":[{"role":"user","content":"hi"}],"max_tokens":4}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		fake.mu.Lock()
		defer fake.mu.Unlock()
		if resp.StatusCode != http.StatusOK || len(fake.chats) == 0 {
			t.Fatalf("chat for r1: status %d, %d chats reached vLLM", resp.StatusCode, len(fake.chats))
		}
		got = fake.chats[len(fake.chats)-1]
		return got == "r1@4"
	}) {
		t.Fatalf("vLLM received model %q for r1, want r1@4", got)
	}
}

// cache is the --adapters-cache folder of the test folder dir, relative
// to the test's working directory as an operator may give it.
func cache(dir string) string {
	wd, err := os.Getwd()
	if err != nil {
		return filepath.Join(dir, "cache")
	}
	rel, err := filepath.Rel(wd, filepath.Join(dir, "cache"))
	if err != nil {
		return filepath.Join(dir, "cache")
	}
	return rel
}

// writeTestStep writes a random rank-2 adapter for the tiny model as step n
// of the local run folder, with an optimizer file that a pull must skip.
func writeTestStep(t *testing.T, tiny, local string, n int) {
	t.Helper()
	m, err := model.Load(tiny, ref.New())
	if err != nil {
		t.Fatal(err)
	}
	ad, err := model.NewAdapter(&m.Config, model.AdapterConfig{Rank: 2, Alpha: 4, Targets: model.AllModules()}, uint64(n))
	if err != nil {
		t.Fatal(err)
	}
	if err := model.WriteAdapter(filepath.Join(local, runfolder.StepName(n)), ad, tiny); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(local, runfolder.StepName(n), "optimizer.safetensors"), []byte("not pulled"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTemporaryAdaptersCache: without --adapters-cache the steps are
// pulled into a new temporary folder, which goes when the server stops
// (it was left in $TMPDIR before); the pulling stops with it.
func TestTemporaryAdaptersCache(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // os.MkdirTemp's folder
	s3 := fakes3d.StartTest(t, "hone")
	local := filepath.Join(t.TempDir(), "r1")
	writeTestStep(t, "../../serve/testdata/tiny", local, 1)
	if err := runfolder.WritePointer(local, runfolder.LatestName, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := runfolder.Publish(context.Background(), local, s3.URL("hone", "adapters/r1")); err != nil {
		t.Fatal(err)
	}
	var r remoteAdapters
	adapters := s3.URL("hone", "adapters")
	stop, err := r.start(context.Background(), &adapters, 10*time.Millisecond, 0, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(adapters, tmp+string(filepath.Separator)) {
		t.Fatalf("adapters folder %s is not in $TMPDIR %s", adapters, tmp)
	}
	if _, err := os.Stat(filepath.Join(adapters, "r1", "step-000001", "adapter_model.safetensors")); err != nil {
		t.Fatalf("step 1 not pulled: %v", err)
	}
	stop()
	gets := s3.Requests(http.MethodGet)
	if _, err := os.Stat(adapters); !os.IsNotExist(err) {
		t.Errorf("the temporary adapters folder %s is still there after stop (%v)", adapters, err)
	}
	// sleep: the pause is the point: five poll intervals in which a puller
	// still running would have listed the store.
	time.Sleep(50 * time.Millisecond)
	if got := s3.Requests(http.MethodGet); got != gets {
		t.Errorf("%d requests to the store after stop", got-gets)
	}
}

// publishTestStep writes step n of the tiny model's run folder local, moves
// its latest there, and publishes the folder to remote.
func publishTestStep(t *testing.T, tiny, local, remote string, n int) {
	t.Helper()
	writeTestStep(t, tiny, local, n)
	if err := runfolder.WritePointer(local, runfolder.LatestName, n); err != nil {
		t.Fatal(err)
	}
	if _, err := runfolder.Publish(context.Background(), local, remote); err != nil {
		t.Fatal(err)
	}
}

// TestAdaptersFromObjectStorePullsWhatItKeeps: --max-adapters 0 is the
// default (2 steps a run), for what is pulled as for what is kept: a run
// with three published steps has its newest two pulled, not every step.
func TestAdaptersFromObjectStorePullsWhatItKeeps(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	dir := t.TempDir()
	tiny := "../../serve/testdata/tiny"
	local := filepath.Join(dir, "train", "r1")
	for n := 1; n <= 3; n++ {
		publishTestStep(t, tiny, local, s3.URL("hone", "adapters/r1"), n)
	}
	cache := filepath.Join(dir, "cache")
	addr := openaitest.StartProcess(t, binary, "--model", tiny, "--port", "0", "--threads", "1", "--max-adapters", "0",
		"--adapters", s3.URL("hone", "adapters"), "--adapters-cache", cache, "--poll-interval", "50ms")
	waitfor.Until(t, 20*time.Second, "r1@3 served", func() bool {
		resp, err := http.Get("http://" + addr + "/v1/models")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), `"r1@3"`)
	})
	var steps []string
	entries, _ := os.ReadDir(filepath.Join(cache, "r1"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "step-") {
			steps = append(steps, e.Name())
		}
	}
	if !slices.Equal(steps, []string{"step-000002", "step-000003"}) {
		t.Errorf("pulled %q, want the newest two steps", steps)
	}
}

// One run of the store that cannot be pulled (its latest names a step it
// does not hold: a trainer's pod died mid-publish, or the folder was
// edited by hand) is passed over with a warning, as a local adapters
// folder's is, and the other runs are served and follow their new steps.
// Before, its error ended the pull of every run: hone-serve refused to
// start, and once running, a run listed after it was never updated again.
func TestObjectStoreBadRunLeavesOthersServed(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	dir := t.TempDir()
	tiny := "../../serve/testdata/tiny"
	ctx := context.Background()
	// "a-bad" lists before "r1".
	if err := fileset.WriteFile(ctx, s3.URL("hone", "adapters/a-bad/latest"), []byte("step-000003\n")); err != nil {
		t.Fatal(err)
	}
	if err := fileset.WriteFile(ctx, s3.URL("hone", "adapters/a-bad/step-000001/adapter_config.json"), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(dir, "train", "r1")
	publish := func(n int) { publishTestStep(t, tiny, local, s3.URL("hone", "adapters/r1"), n) }
	publish(1)
	addr := openaitest.StartProcess(t, binary, "--model", tiny, "--port", "0", "--threads", "1",
		"--adapters", s3.URL("hone", "adapters"), "--adapters-cache", filepath.Join(dir, "cache"), "--poll-interval", "50ms")
	served := func(id string) {
		t.Helper()
		waitfor.Until(t, 20*time.Second, id+" served", func() bool {
			resp, err := http.Get("http://" + addr + "/v1/models")
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return strings.Contains(string(b), `"`+id+`"`)
		})
	}
	served("r1@1")
	publish(2)
	served("r1@2")
}

// A run of the store that cannot be pulled is warned about once, not at
// every poll: its latest naming a step it lacks stays so until its trainer
// publishes again (or for good, when that trainer is gone), and the
// warning filled the log once a --poll-interval (a second by default).
// It is warned about again after it was pulled and broke anew.
func TestObjectStoreBadRunWarnedOnce(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	dir := t.TempDir()
	tiny := "../../serve/testdata/tiny"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := fileset.WriteFile(ctx, s3.URL("hone", "adapters/a-bad/latest"), []byte("step-000003\n")); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(dir, "train", "r1")
	publish := func(n int) { publishTestStep(t, tiny, local, s3.URL("hone", "adapters/r1"), n) }
	publish(1)
	var log waitfor.Buffer
	adapters := s3.URL("hone", "adapters")
	cache := filepath.Join(dir, "cache")
	stop, err := (&remoteAdapters{cache: cache}).start(ctx, &adapters, 5*time.Millisecond, 2, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	pulled := func(n int) {
		t.Helper()
		waitfor.Until(t, 20*time.Second, fmt.Sprintf("r1's step %d pulled", n), func() bool {
			_, err := os.Stat(filepath.Join(cache, "r1", runfolder.StepName(n)))
			return err == nil
		})
	}
	// Polls go on: each new step of r1 is pulled at a later one.
	for n := 2; n <= 4; n++ {
		publish(n)
		pulled(n)
	}
	if got := strings.Count(log.String(), "cannot pull the run"); got != 1 {
		t.Fatalf("the broken run warned about %d times over the polls, want once:\n%s", got, log.String())
	}
	// Mended, then broken again: a new warning.
	if err := fileset.WriteFile(ctx, s3.URL("hone", "adapters/a-bad/latest"), []byte("step-000001\n")); err != nil {
		t.Fatal(err)
	}
	if err := fileset.WriteFile(ctx, s3.URL("hone", "adapters/a-bad/step-000001/adapter_config.json"), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, 20*time.Second, "a-bad's step 1 pulled", func() bool {
		_, err := os.Stat(filepath.Join(cache, "a-bad", runfolder.StepName(1)))
		return err == nil
	})
	if err := fileset.WriteFile(ctx, s3.URL("hone", "adapters/a-bad/latest"), []byte("step-000009\n")); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, 20*time.Second, "the run broken anew warned about", func() bool {
		return strings.Count(log.String(), "cannot pull the run") == 2
	})
}

// A store whose listing fails as a whole (here its bucket is gone) was
// warned about at every poll, each second by default, for as long as it
// stayed so: it is warned about once, and said to work again once it does.
func TestObjectStoreListingFailureWarnedOnce(t *testing.T) {
	s3 := fakes3d.StartTest(t, "other")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log waitfor.Buffer
	adapters := s3.URL("other", "adapters")
	stop, err := (&remoteAdapters{cache: filepath.Join(t.TempDir(), "cache")}).start(ctx, &adapters, 5*time.Millisecond, 2, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	bucket := func(method string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, s3.Endpoint+"/other", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("%s bucket: %s", method, resp.Status)
		}
	}
	bucket(http.MethodDelete)
	waitfor.Until(t, 20*time.Second, "the failing listing warned about", func() bool {
		return strings.Contains(log.String(), "pulling adapters failed")
	})
	// Ten polls more, each a listing (a GET of the bucket).
	gets := s3.Requests(http.MethodGet)
	waitfor.Until(t, 20*time.Second, "ten polls more", func() bool { return s3.Requests(http.MethodGet) >= gets+10 })
	if got := strings.Count(log.String(), "pulling adapters failed"); got != 1 {
		t.Fatalf("the failing listing warned about %d times over the polls, want once:\n%s", got, log.String())
	}
	bucket(http.MethodPut)
	waitfor.Until(t, 20*time.Second, "said to work again", func() bool {
		return strings.Contains(log.String(), "pulling adapters works again")
	})
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hone-rl/hone/collect/openaitest"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/internal/fakes3d"
	"github.com/hone-rl/hone/internal/waitfor"
)

// TestObjectStoreRunPublishedAnewServed: a run deleted from the store and
// trained again under its name, its latest now older than the copy's, was
// never pulled again: hone-serve served the deleted run's adapter for
// good without a word. The copy is replaced by the store's run and its
// step served.
func TestObjectStoreRunPublishedAnewServed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	s3 := fakes3d.StartTest(t, "hone")
	dir := t.TempDir()
	tiny := "../../serve/testdata/tiny"
	remote := s3.URL("hone", "adapters/r1")
	for n := 2; n <= 3; n++ {
		publishTestStep(t, tiny, filepath.Join(dir, "train", "old"), remote, n)
	}
	cache := filepath.Join(dir, "cache")
	addr := openaitest.StartProcess(t, binary, "--model", tiny, "--port", "0", "--threads", "1",
		"--adapters", s3.URL("hone", "adapters"), "--adapters-cache", cache, "--poll-interval", "20ms")
	served := func(id string) bool {
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
		return slices.ContainsFunc(body.Data, func(d struct {
			ID string `json:"id"`
		}) bool {
			return d.ID == id
		})
	}
	waitfor.Until(t, 20*time.Second, "r1@3 served", func() bool { return served("r1@3") })
	if err := fileset.RemoveAll(context.Background(), remote); err != nil {
		t.Fatal(err)
	}
	// The new run's step 1, weights of another seed than the old run's.
	fresh := filepath.Join(dir, "train", "new")
	writeTestStep(t, tiny, fresh, 7)
	if err := os.Rename(filepath.Join(fresh, runfolder.StepName(7)), filepath.Join(fresh, runfolder.StepName(1))); err != nil {
		t.Fatal(err)
	}
	if err := runfolder.WritePointer(fresh, runfolder.LatestName, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := runfolder.Publish(context.Background(), fresh, remote); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, 20*time.Second, "r1@1 of the run published anew served", func() bool { return served("r1@1") })
	// The deleted run's step 3, still loaded, was served under r1@3, a
	// step the new run has not reached (TestReplacedRunStepsNotServed).
	waitfor.Until(t, 20*time.Second, "r1@3 of the deleted run no longer served", func() bool { return !served("r1@3") })
	want, err := os.ReadFile(filepath.Join(fresh, runfolder.StepName(1), "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(cache, "r1", runfolder.StepName(1), "adapter_model.safetensors")); err != nil || !bytes.Equal(got, want) {
		t.Errorf("the cache's step 1 is not the new run's (%v)", err)
	}
	for _, gone := range []int{2, 3} {
		if _, err := os.Stat(filepath.Join(cache, "r1", runfolder.StepName(gone))); err == nil {
			t.Errorf("the old run's %s is still in the cache", runfolder.StepName(gone))
		}
	}
}

package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hone-rl/hone/collect/openaitest"
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
	publish := func(n int) {
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
		if err := runfolder.WritePointer(local, runfolder.LatestName, n); err != nil {
			t.Fatal(err)
		}
		if _, err := runfolder.Publish(context.Background(), local, s3.URL("hone", "adapters/r1")); err != nil {
			t.Fatal(err)
		}
	}
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

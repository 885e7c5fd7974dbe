package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/internal/fakes3d"
	"github.com/hone-rl/hone/internal/waitfor"
)

// The cluster's order (serve.yaml applied, then round.yaml's first train):
// hone-serve starts on a bucket that exists and holds no adapters yet, and
// on a run folder whose step files are up but whose latest is not (a
// publish under way). Neither is a missing bucket: it serves the base
// model, warns of nothing and exits with nothing, and loads the step once
// the store's latest names it.
func TestObjectStoreEmptyBucketWaitsForFirstPublish(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	dir := t.TempDir()
	tiny := "../../serve/testdata/tiny"
	var log waitfor.Buffer
	cmd := exec.Command(binary, "--model", tiny, "--port", "0", "--threads", "1",
		"--adapters", s3.URL("hone", "adapters"), "--adapters-cache", filepath.Join(dir, "cache"), "--poll-interval", "50ms")
	cmd.Stderr = &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	}()
	listening := regexp.MustCompile(`listening.*addr=(\S+)`)
	var addr string
	waitfor.Until(t, 30*time.Second, "hone-serve listening", func() bool {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("hone-serve exited on an empty bucket: %v\n%s", err, log.String())
		default:
		}
		m := listening.FindStringSubmatch(log.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	})
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
	if got := models(); !slices.Equal(got, []string{"tiny"}) {
		t.Fatalf("on an empty bucket /v1/models lists %q, want the base model alone", got)
	}
	// A step's files up, the store's latest not yet: polled over, unnoticed.
	local := filepath.Join(dir, "train", "r1")
	writeTestStep(t, tiny, local, 1)
	for _, f := range []string{"adapter_config.json", "adapter_model.safetensors"} {
		b, err := os.ReadFile(filepath.Join(local, runfolder.StepName(1), f))
		if err != nil {
			t.Fatal(err)
		}
		if err := fileset.WriteFile(context.Background(), s3.URL("hone", "adapters/r1/"+runfolder.StepName(1)+"/"+f), b); err != nil {
			t.Fatal(err)
		}
	}
	gets := s3.Requests(http.MethodGet)
	waitfor.Until(t, 20*time.Second, "ten polls", func() bool { return s3.Requests(http.MethodGet) >= gets+10 })
	if got := models(); !slices.Equal(got, []string{"tiny"}) {
		t.Fatalf("with a step uploaded and no latest /v1/models lists %q, want the base model alone", got)
	}
	if err := runfolder.WritePointer(local, runfolder.LatestName, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := runfolder.Publish(context.Background(), local, s3.URL("hone", "adapters/r1")); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, 20*time.Second, "r1@1 served", func() bool { return slices.Contains(models(), "r1@1") })
	if strings.Contains(log.String(), "level=WARN") || strings.Contains(log.String(), "level=ERROR") {
		t.Errorf("hone-serve warned on a bucket waiting for its first publish:\n%s", log.String())
	}
}

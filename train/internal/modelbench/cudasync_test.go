package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels/cuda/cudafake"
)

// TestWorkerCUDASync runs the worker's tiny training step and decode with
// --cuda-sync edges (cuda.Backend stream-ordered) over the emulating CUDA
// libraries, through the real loader: each prints its BENCH line with
// "cuda_sync":"edges". A value that is neither op nor edges, edges on the
// CPU, and edges with --profile-ops (whose profile synchronizes every op)
// are errors naming the flag.
func TestWorkerCUDASync(t *testing.T) {
	libs, err := cudafake.BuildEmulatingLibs(context.Background(), "gcc", "g++", "../../../kernels/cuda", t.TempDir())
	if errors.Is(err, exec.ErrNotFound) && os.Getenv("CI") == "" {
		t.Skipf("no compiler for the emulating CUDA libraries: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	cudaArgs := []string{"--device", "cuda", "--libcuda", libs.Driver, "--libcublas", libs.BLAS}
	for _, run := range [][]string{
		{"train", "--batch", "1", "--seq", "8", "--steps", "1"},
		{"decode", "--batch", "2", "--prompt", "4", "--tokens", "2"},
	} {
		var out bytes.Buffer
		if err := worker(context.Background(), append(append(run, cudaArgs...), "--cuda-sync", "edges"), &out); err != nil {
			t.Fatalf("%s --cuda-sync edges: %v", run[0], err)
		}
		if s := out.String(); !strings.Contains(s, `"cuda_sync":"edges"`) || !strings.Contains(s, "BENCH {") {
			t.Errorf("%s --cuda-sync edges: no BENCH line with \"cuda_sync\":\"edges\":\n%s", run[0], s)
		}
	}
	for _, bad := range [][]string{
		append([]string{"train", "--cuda-sync", "never"}, cudaArgs...),
		{"train", "--cuda-sync", "edges"},
		append([]string{"train", "--cuda-sync", "edges", "--profile-ops"}, cudaArgs...),
	} {
		if err := worker(context.Background(), bad, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--cuda-sync") {
			t.Errorf("worker %v: err %v, want one naming --cuda-sync", bad, err)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
)

// TestWorkerCUDASync runs the worker's tiny training step and decode with
// --cuda-sync edges (cuda.Backend stream-ordered) over the emulating CUDA
// libraries, through the real loader: each prints its BENCH line with
// "cuda_sync":"edges"; decode chooses its tokens on the device
// (kernels.RowChooser) by default and with --choose device, on the host
// with --choose host, and says so ("choose"). A value that is neither op
// nor edges, edges on the CPU, and edges with --profile-ops (whose profile
// synchronizes every op) are errors naming the flag; so are a --choose
// that is neither host nor device, device on the CPU, and --choose for
// training.
func TestWorkerCUDASync(t *testing.T) {
	libs := emulatingLibs(t)
	cudaArgs := []string{"--device", "cuda", "--libcuda", libs.Driver, "--libcublas", libs.BLAS}
	decode := []string{"decode", "--batch", "2", "--prompt", "4", "--tokens", "2"}
	for _, run := range []struct {
		args   []string
		choose string // the BENCH line's "choose"
	}{
		{[]string{"train", "--batch", "1", "--seq", "8", "--steps", "1"}, ""},
		{decode, "device"},
		{append(slices.Clone(decode), "--choose", "host"), "host"},
		{append(slices.Clone(decode), "--choose", "device"), "device"},
	} {
		var out bytes.Buffer
		if err := worker(context.Background(), append(append(run.args, cudaArgs...), "--cuda-sync", "edges"), &out); err != nil {
			t.Fatalf("%v --cuda-sync edges: %v", run.args, err)
		}
		if s := out.String(); !strings.Contains(s, `"cuda_sync":"edges"`) || !strings.Contains(s, "BENCH {") {
			t.Errorf("%v --cuda-sync edges: no BENCH line with \"cuda_sync\":\"edges\":\n%s", run.args, s)
		}
		if s := out.String(); run.choose != "" && !strings.Contains(s, `"choose":"`+run.choose+`"`) {
			t.Errorf("%v: no BENCH line with \"choose\":%q:\n%s", run.args, run.choose, s)
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
	for _, bad := range [][]string{
		append(append(slices.Clone(decode), "--choose", "gpu"), cudaArgs...),
		append(slices.Clone(decode), "--choose", "device"),
		append([]string{"train", "--choose", "host"}, cudaArgs...),
	} {
		if err := worker(context.Background(), bad, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--choose") {
			t.Errorf("worker %v: err %v, want one naming --choose", bad, err)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
)

// TestWorkerProfileOps runs the worker's tiny training step and decode on
// cuda.Backend over the emulating CUDA libraries (the real kernels on the
// CPU, through the real loader) with --profile-ops, and checks the OPS
// lines name the model's ops beside a BENCH line: a decode's ChooseRows
// (the tokens chosen on the device, the default) and no CopyToHost, or
// with --choose host its CopyToHost of the logits and no ChooseRows.
func TestWorkerProfileOps(t *testing.T) {
	libs := emulatingLibs(t)
	cudaArgs := []string{"--device", "cuda", "--libcuda", libs.Driver, "--libcublas", libs.BLAS, "--profile-ops"}
	for _, run := range [][]string{
		{"train", "--batch", "1", "--seq", "8", "--steps", "1"},
		{"decode", "--batch", "2", "--prompt", "4", "--tokens", "2"},
		{"decode", "--batch", "2", "--prompt", "4", "--tokens", "2", "--choose", "host"},
	} {
		// The training attention's profile name says its kernels: f32 here.
		attn := map[string]string{"train": "OPS AttentionBackward (f32)", "decode": "OPS AttentionDecode"}[run[0]]
		var out bytes.Buffer
		if err := worker(context.Background(), append(run, cudaArgs...), &out); err != nil {
			t.Fatalf("%s: %v", run[0], err)
		}
		s := out.String()
		wants := []string{attn, "OPS RMSNormForward", "OPS (outside ops)", "OPS (timed total)", "BENCH {"}
		var not []string
		switch {
		case run[0] == "decode" && slices.Contains(run, "host"):
			// Each step's logits come to the host in one bulk copy
			// (kernels.HostCopier), timed as an op.
			wants, not = append(wants, "OPS CopyToHost"), []string{"OPS ChooseRows"}
		case run[0] == "decode":
			wants, not = append(wants, "OPS ChooseRows"), []string{"OPS CopyToHost"}
		}
		for _, want := range wants {
			if !strings.Contains(s, want) {
				t.Errorf("%v: no %q in the output:\n%s", run, want, s)
			}
		}
		for _, n := range not {
			if strings.Contains(s, n) {
				t.Errorf("%v: %q in the output:\n%s", run, n, s)
			}
		}
	}
	if err := worker(context.Background(), []string{"train", "--profile-ops"}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--device cuda") {
		t.Errorf("--profile-ops on the CPU: err %v, want one naming --device cuda", err)
	}
	// --attention-kernel: tc2 (and gemm) runs a bf16 training step on the device; a
	// name that is no kernel, or the flag on the CPU, is an error.
	bf16 := []string{"train", "--batch", "1", "--seq", "8", "--steps", "1", "--dtype", "bf16", "--compute", "bf16"}
	var out bytes.Buffer
	if err := worker(context.Background(), append(append(bf16, cudaArgs...), "--attention-kernel", "tc2"), &out); err != nil {
		t.Fatalf("--attention-kernel tc2: %v", err)
	}
	if s := out.String(); !strings.Contains(s, "OPS AttentionBackward (tc2)") || !strings.Contains(s, "OPS AttentionForward (tc2)") {
		t.Errorf("--attention-kernel tc2: no AttentionForward (tc2) and AttentionBackward (tc2) in the output:\n%s", s)
	}
	// gemm: the GEMM attention, its products on the C stand-in for cuBLAS's
	// cublasGemmStridedBatchedEx.
	out.Reset()
	if err := worker(context.Background(), append(append(bf16, cudaArgs...), "--attention-kernel", "gemm"), &out); err != nil {
		t.Fatalf("--attention-kernel gemm: %v", err)
	}
	if s := out.String(); !strings.Contains(s, "OPS AttentionBackward (gemm)") || !strings.Contains(s, "OPS AttentionForward (gemm)") {
		t.Errorf("--attention-kernel gemm: no AttentionForward (gemm) and AttentionBackward (gemm) in the output:\n%s", s)
	}
	// --gemm cublaslt: the linear layers' GEMMs on the C stand-in for
	// cuBLASLt, loaded from --libcublaslt; on the CPU, or with cuBLASLt
	// missing, an error.
	out.Reset()
	if err := worker(context.Background(), append(append(bf16, cudaArgs...), "--gemm", "cublaslt", "--libcublaslt", libs.BLASLt), &out); err != nil {
		t.Fatalf("--gemm cublaslt: %v", err)
	}
	if s := out.String(); !strings.Contains(s, `"gemm":"cublaslt"`) {
		t.Errorf("--gemm cublaslt: no \"gemm\":\"cublaslt\" in the BENCH line:\n%s", s)
	}
	missing := libs.BLASLt + ".absent"
	if err := worker(context.Background(), append(append(bf16, cudaArgs...), "--gemm", "cublaslt", "--libcublaslt", missing), &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "no cuBLASLt library") || !strings.Contains(err.Error(), missing) {
		t.Errorf("--gemm cublaslt without the library: err %v, want one naming it", err)
	}
	if err := worker(context.Background(), []string{"train", "--gemm", "cublaslt"}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--device cuda") {
		t.Errorf("--gemm on the CPU: err %v, want one naming --device cuda", err)
	}
	if err := worker(context.Background(), append(append(bf16, cudaArgs...), "--attention-kernel", "tc9"), &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "tc9") {
		t.Errorf("--attention-kernel tc9: err %v, want one naming it", err)
	}
	if err := worker(context.Background(), []string{"train", "--attention-kernel", "tc2"}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--device cuda") {
		t.Errorf("--attention-kernel on the CPU: err %v, want one naming --device cuda", err)
	}
}

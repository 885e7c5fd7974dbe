package main

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/kernels/cuda"
)

// TestWorkerProfileOps runs the worker's tiny training step and decode on
// cuda.Backend over the emulating CUDA libraries (the real kernels on the
// CPU, through the real loader) with --profile-ops, and checks the OPS
// lines name the model's ops beside a BENCH line: a decode's ChooseRows
// (the tokens chosen on the device, the default) and no CopyToHost, or
// with --choose host its CopyToHost of the logits and no ChooseRows; the
// ops with products with their TFLOP/s (Matmul split by M×N×K, the linear
// layers by their weight), the "(products)" summary of them, and with
// --peak-tflops its percent of the peak.
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
		// The products: each op's TFLOP/s, and the summary, here without a
		// peak to set it against.
		res := []string{`(?m)^OPS LinearForward w\d+×\d+ +\d+ calls .* us/call +\d+\.\d TFLOP/s$`,
			`(?m)^OPS \(products\) +\d+ calls +\d+\.\d ms +\d+\.\d% +\d+\.\d{3} TFLOP +\d+\.\d TFLOP/s$`}
		if run[0] == "train" { // the LoRA products (decode runs no adapter)
			res = append(res, `(?m)^OPS Matmul \d+×\d+×\d+ +\d+ calls .* TFLOP/s$`, `(?m)^OPS LoRABackwardMany w[\d+]+×\d+ r8 +\d+ calls .* TFLOP/s$`)
		}
		for _, re := range res {
			if !regexp.MustCompile(re).MatchString(s) {
				t.Errorf("%v: no line matching %s in the output:\n%s", run, re, s)
			}
		}
		if !regexp.MustCompile(`(?m)^OPS RMSNormForward .*us/call$`).MatchString(s) {
			t.Errorf("%v: RMSNormForward, an op without products, with a TFLOP/s in the output:\n%s", run, s)
		}
	}
	// --peak-tflops: negative, not a number, or without --profile-ops,
	// refused.
	for _, c := range []struct {
		args []string
		want string
	}{
		{append([]string{"train", "--peak-tflops", "-1"}, cudaArgs...), "--peak-tflops -1"},
		{append([]string{"train", "--peak-tflops", "NaN"}, cudaArgs...), "--peak-tflops NaN"},
		{[]string{"train", "--peak-tflops", "989"}, "--profile-ops"},
	} {
		if err := worker(context.Background(), c.args, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want one naming %s", c.args, err, c.want)
		}
	}
	if err := worker(context.Background(), []string{"train", "--profile-ops"}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--device cuda") {
		t.Errorf("--profile-ops on the CPU: err %v, want one naming --device cuda", err)
	}
	// --attention-kernel: tc2 (and gemm) runs a bf16 training step on the device; a
	// name that is no kernel, or the flag on the CPU, is an error.
	bf16 := []string{"train", "--batch", "1", "--seq", "8", "--steps", "1", "--dtype", "bf16", "--compute", "bf16"}
	var out bytes.Buffer
	if err := worker(context.Background(), append(append(bf16, cudaArgs...), "--attention-kernel", "tc2", "--peak-tflops", "989"), &out); err != nil {
		t.Fatalf("--attention-kernel tc2: %v", err)
	}
	if s := out.String(); !strings.Contains(s, "OPS AttentionBackward (tc2)") || !strings.Contains(s, "OPS AttentionForward (tc2)") {
		t.Errorf("--attention-kernel tc2: no AttentionForward (tc2) and AttentionBackward (tc2) in the output:\n%s", s)
	}
	var out3 bytes.Buffer
	if err := worker(context.Background(), append(append(bf16, cudaArgs...), "--attention-kernel", "tc3"), &out3); err != nil {
		t.Fatalf("--attention-kernel tc3: %v", err)
	}
	if s := out3.String(); !strings.Contains(s, "OPS AttentionBackward (tc3)") || !strings.Contains(s, "OPS AttentionForward (tc3)") {
		t.Errorf("--attention-kernel tc3: no AttentionForward (tc3) and AttentionBackward (tc3) in the output:\n%s", s)
	}
	// In the bf16 precision the base layers' products, the LoRA's product
	// written first (kernels.LinearAdderBF16), are LinearForwardBF16ManyAdd's,
	// o alone; those of q, k, v, of gate, up and of down take the input's
	// bf16 rounding its norm or gated unit wrote (kernels.InputRounder),
	// LinearForwardBF16Rounded's; and with --peak-tflops both summaries say
	// their share of the peak.
	for _, re := range []string{`(?m)^OPS LinearForwardBF16ManyAdd w\d+×\d+ +\d+ calls .* TFLOP/s$`,
		`(?m)^OPS LinearForwardBF16Rounded w\d+\+\d+\+\d+×\d+ +\d+ calls .* TFLOP/s$`,
		`(?m)^OPS \(products\) +\d+ calls .* TFLOP/s +\d+\.\d% of the 989 TFLOP/s peak$`,
		`(?m)^OPS \(products w/o attention\) +\d+ calls .* TFLOP/s +\d+\.\d% of the 989 TFLOP/s peak$`} {
		if s := out.String(); !regexp.MustCompile(re).MatchString(s) {
			t.Errorf("--peak-tflops 989: no line matching %s in the output:\n%s", re, s)
		}
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

// TestOpsProfilePrint checks the OPS lines' figures on a profile given
// here: each op with products says its TFLOP/s (FLOPs over its time), an
// op without none; the summaries add up the ops with products, all of them
// and all but the attention, and set their TFLOP/s against the peak.
func TestOpsProfilePrint(t *testing.T) {
	ops := []cuda.OpTime{
		{Op: "AttentionBackward (tc1)", Calls: 2, Total: 300 * time.Millisecond, Flops: 30e12},
		{Op: "LinearForwardBF16 w18944×3584", Calls: 4, Total: 200 * time.Millisecond, Flops: 100e12},
		{Op: "Matmul 8192×16×3584", Calls: 10, Total: 100 * time.Millisecond, Flops: 10e12},
		{Op: "Zero", Calls: 3, Total: 50 * time.Millisecond},
	}
	for _, c := range []struct {
		peak  float64
		lines map[string]string // name → the fields after it
	}{
		{1000, map[string]string{
			"AttentionBackward (tc1)":       "2 calls 300.0 ms 30.0% 150000.0 us/call 100.0 TFLOP/s",
			"LinearForwardBF16 w18944×3584": "4 calls 200.0 ms 20.0% 50000.0 us/call 500.0 TFLOP/s",
			"Matmul 8192×16×3584":           "10 calls 100.0 ms 10.0% 10000.0 us/call 100.0 TFLOP/s",
			"Zero":                          "3 calls 50.0 ms 5.0% 16666.7 us/call",
			"(products)":                    "16 calls 600.0 ms 60.0% 140.000 TFLOP 233.3 TFLOP/s 23.3% of the 1000 TFLOP/s peak",
			"(products w/o attention)":      "14 calls 300.0 ms 30.0% 110.000 TFLOP 366.7 TFLOP/s 36.7% of the 1000 TFLOP/s peak",
			"(outside ops)":                 "350.0 ms 35.0%",
			"(timed total)":                 "1000.0 ms",
		}},
		{0, map[string]string{
			"(products)":               "16 calls 600.0 ms 60.0% 140.000 TFLOP 233.3 TFLOP/s",
			"(products w/o attention)": "14 calls 300.0 ms 30.0% 110.000 TFLOP 366.7 TFLOP/s",
		}},
	} {
		var out bytes.Buffer
		(&opsProfile{ops: ops, timed: time.Second, peak: c.peak}).print(&out)
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 8 {
			t.Errorf("peak %g: %d lines, want 8:\n%s", c.peak, len(lines), out.String())
		}
		for name, want := range c.lines {
			got := ""
			for _, line := range lines {
				if rest, ok := strings.CutPrefix(line, "OPS "+name+" "); ok {
					got = strings.Join(strings.Fields(rest), " ")
				}
			}
			if got != want {
				t.Errorf("peak %g: OPS %s: %q, want %q", c.peak, name, got, want)
			}
		}
	}
	// No op with products: no summary line.
	var out bytes.Buffer
	(&opsProfile{ops: ops[3:], timed: time.Second, peak: 1000}).print(&out)
	if strings.Contains(out.String(), "(products") {
		t.Errorf("a products summary without products:\n%s", out.String())
	}
}

package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cpu"
)

// TestComputeFlag: --compute bf16 needs --dtype bfloat16, and a CPU with
// AVX512-BF16 unless --bf16-kernel portable (which needs --compute bf16);
// all are checked before the model is read (exit 2).
func TestComputeFlag(t *testing.T) {
	missing := t.TempDir() + "/no-model"
	err := run(context.Background(), []string{"--model", missing, "--dtype", "bfloat16", "--bf16-kernel", "portable"}, noEnv, io.Discard, &bytes.Buffer{})
	if cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(err.Error(), "needs --compute bf16") {
		t.Fatalf("--bf16-kernel portable with --compute f32: %v (exit %d), want usage naming --compute bf16", err, cli.ExitCode(err))
	}
	err = run(context.Background(), []string{"--model", missing, "--dtype", "bfloat16", "--compute", "bf16", "--bf16-kernel", "avx2"}, noEnv, io.Discard, &bytes.Buffer{})
	if cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(err.Error(), "--bf16-kernel") {
		t.Fatalf("--bf16-kernel avx2: %v (exit %d), want usage naming --bf16-kernel", err, cli.ExitCode(err))
	}
	err = run(context.Background(), []string{"--model", missing, "--dtype", "bfloat16", "--compute", "bf16", "--bf16-kernel", "portable"}, noEnv, io.Discard, &bytes.Buffer{})
	if probe, perr := cpu.New(cpu.Options{Compute: kernels.PrecisionBF16, BF16Kernel: "portable"}); perr == nil {
		probe.Close() // the backend starts on any CPU; the missing model is what fails
		if err == nil || strings.Contains(err.Error(), "AVX512-BF16") || !strings.Contains(err.Error(), "no-model") {
			t.Fatalf("--compute bf16 --bf16-kernel portable and no model: %v (exit %d), want the model's error", err, cli.ExitCode(err))
		}
	} else if os.Getenv("CI") != "" {
		t.Fatalf("no portable bfloat16 kernel in this build (CI needs cgo): %v", perr)
	}
	err = run(context.Background(), []string{"--model", missing, "--compute", "bf16"}, noEnv, io.Discard, &bytes.Buffer{})
	if cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(err.Error(), "--dtype bfloat16") {
		t.Fatalf("--compute bf16 over float32 weights: %v (exit %d), want usage naming --dtype bfloat16", err, cli.ExitCode(err))
	}
	err = run(context.Background(), []string{"--model", missing, "--compute", "f16"}, noEnv, io.Discard, &bytes.Buffer{})
	if cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(err.Error(), "--compute") {
		t.Fatalf("--compute f16: %v (exit %d), want usage naming --compute", err, cli.ExitCode(err))
	}
	err = run(context.Background(), []string{"--model", missing, "--dtype", "bfloat16", "--compute", "bf16"}, noEnv, io.Discard, &bytes.Buffer{})
	if probe, perr := cpu.New(cpu.Options{Compute: kernels.PrecisionBF16}); perr == nil {
		probe.Close() // the backend starts; the missing model is what fails
		if err == nil || strings.Contains(err.Error(), "AVX512-BF16") {
			t.Fatalf("--compute bf16 on a CPU with AVX512-BF16 and no model: %v, want the model's error", err)
		}
		return
	}
	if cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(err.Error(), "AVX512-BF16") {
		t.Fatalf("--compute bf16 without AVX512-BF16: %v (exit %d), want usage naming it", err, cli.ExitCode(err))
	}
}

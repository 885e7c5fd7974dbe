package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cpu"
)

// TestComputeFlag: --compute bf16 needs --dtype bfloat16, and a CPU with
// AVX512-BF16; both are checked before the model is read (exit 2).
func TestComputeFlag(t *testing.T) {
	missing := t.TempDir() + "/no-model"
	err := run(context.Background(), []string{"--model", missing, "--compute", "bf16"}, noEnv, io.Discard, &bytes.Buffer{})
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

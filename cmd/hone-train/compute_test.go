package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/train/checkpoint"
)

// TestComputeFlag: --compute bf16 needs bfloat16 weights, and a CPU with
// AVX512-BF16 — without one it exits 2 naming it and writes nothing; with
// one, a GRPO step trains. --bf16-kernel portable needs --compute bf16, and
// with it a GRPO step trains on any CPU (with cgo).
func TestComputeFlag(t *testing.T) {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	in := filepath.Join(dir, "s", "a.parquet")
	adapters := filepath.Join(dir, "adapters")
	base := []string{"grpo", "--model", md, "--run", "bf", "--out", adapters, "--rank", "2", "--threads", "1"}
	var out bytes.Buffer
	err := cli.ExecuteCommand(context.Background(), newRootCmd(&out, &out), append(base, "--compute", "bf16", in))
	if cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(err.Error(), "--dtype bfloat16") {
		t.Fatalf("--compute bf16 over float32 weights: %v (exit %d), want usage naming --dtype bfloat16", err, cli.ExitCode(err))
	}
	out.Reset()
	err = cli.ExecuteCommand(context.Background(), newRootCmd(&out, &out), append(base, "--dtype", "bfloat16", "--bf16-kernel", "portable", in))
	if cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(err.Error(), "needs --compute bf16") {
		t.Fatalf("--bf16-kernel portable with --compute f32: %v (exit %d), want usage naming --compute bf16", err, cli.ExitCode(err))
	}
	out.Reset()
	err = cli.ExecuteCommand(context.Background(), newRootCmd(&out, &out), append(base, "--dtype", "bfloat16", "--compute", "bf16", in))
	if probe, perr := cpu.New(cpu.Options{Compute: kernels.PrecisionBF16}); perr != nil { // this CPU lacks AVX512-BF16
		if cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(err.Error(), "AVX512-BF16") {
			t.Fatalf("--compute bf16 without AVX512-BF16: %v (exit %d), want usage naming it", err, cli.ExitCode(err))
		}
		if _, serr := os.Stat(adapters); !os.IsNotExist(serr) {
			t.Errorf("refused run wrote %s (%v)", adapters, serr)
		}
	} else {
		probe.Close()
		if err != nil {
			t.Fatalf("--compute bf16: %v\n%s", err, out.String())
		}
	}
	probe, perr := cpu.New(cpu.Options{Compute: kernels.PrecisionBF16, BF16Kernel: "portable"})
	if perr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no portable bfloat16 kernel in this build (CI needs cgo): %v", perr)
		}
		t.Skipf("no portable bfloat16 kernel in this build: %v", perr)
	}
	probe.Close()
	out.Reset()
	port := []string{"grpo", "--model", md, "--run", "bfp", "--out", adapters, "--rank", "2", "--threads", "1", "--dtype", "bfloat16", "--compute", "bf16", "--bf16-kernel", "portable", in}
	if err := cli.ExecuteCommand(context.Background(), newRootCmd(&out, &out), port); err != nil {
		t.Fatalf("--compute bf16 --bf16-kernel portable: %v\n%s", err, out.String())
	}
	if _, err := os.Stat((&checkpoint.Run{Dir: filepath.Join(adapters, "bfp")}).StepDir(1)); err != nil {
		t.Errorf("--bf16-kernel portable trained nothing: %v\n%s", err, out.String())
	}
}

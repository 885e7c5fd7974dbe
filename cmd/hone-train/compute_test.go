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
)

// TestComputeFlag: --compute bf16 needs bfloat16 weights, and a CPU with
// AVX512-BF16 — without one it exits 2 naming it and writes nothing; with
// one, a GRPO step trains.
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
	err = cli.ExecuteCommand(context.Background(), newRootCmd(&out, &out), append(base, "--dtype", "bfloat16", "--compute", "bf16", in))
	probe, perr := cpu.New(cpu.Options{Compute: kernels.PrecisionBF16})
	if perr != nil { // this CPU lacks AVX512-BF16
		if cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(err.Error(), "AVX512-BF16") {
			t.Fatalf("--compute bf16 without AVX512-BF16: %v (exit %d), want usage naming it", err, cli.ExitCode(err))
		}
		if _, serr := os.Stat(adapters); !os.IsNotExist(serr) {
			t.Errorf("refused run wrote %s (%v)", adapters, serr)
		}
		return
	}
	probe.Close()
	if err != nil {
		t.Fatalf("--compute bf16: %v\n%s", err, out.String())
	}
}

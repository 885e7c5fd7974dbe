package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
)

// TestCUDAFlagsUsage: --cuda-attention other than tc1 without --device cuda
// --compute bf16, --cuda-sync edges without --device cuda, --cuda-gemm
// cublaslt without --device cuda --compute bf16, and unknown
// values exit 2 naming the flag, before any backend opens, and write
// nothing.
func TestCUDAFlagsUsage(t *testing.T) {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	in := filepath.Join(dir, "s", "a.parquet")
	adapters := filepath.Join(dir, "adapters")
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--cuda-attention", "gemm"}, "--cuda-attention gemm needs --device cuda --compute bf16 (got --device cpu"},
		{[]string{"--device", "cuda", "--cuda-attention", "tc2"}, "--cuda-attention tc2 needs --device cuda --compute bf16 (got --device cuda --compute f32)"},
		{[]string{"--device", "cuda", "--cuda-attention", "flash"}, `--cuda-attention: unknown attention "flash"`},
		{[]string{"--cuda-sync", "edges"}, "--cuda-sync edges needs --device cuda"},
		{[]string{"--device", "cuda", "--cuda-sync", "never"}, `--cuda-sync: unknown mode "never"`},
		{[]string{"--cuda-gemm", "cublaslt"}, "--cuda-gemm cublaslt needs --device cuda --compute bf16 (got --device cpu"},
		{[]string{"--device", "cuda", "--cuda-gemm", "cublaslt"}, "--cuda-gemm cublaslt needs --device cuda --compute bf16 (got --device cuda --compute f32)"},
		{[]string{"--device", "cuda", "--cuda-gemm", "cutlass"}, `--cuda-gemm: unknown library "cutlass"`},
	} {
		for _, job := range []string{"grpo", "sft"} {
			args := append([]string{job, "--model", md, "--run", "r", "--out", adapters, "--threads", "1"}, c.args...)
			var out bytes.Buffer
			err := cli.ExecuteCommand(context.Background(), newRootCmd(&out, &out), append(args, in))
			if cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(err.Error(), c.says) {
				t.Errorf("%v: %v (exit %d), want a usage error saying %q", args, err, cli.ExitCode(err), c.says)
			}
		}
	}
	if _, err := os.Stat(adapters); !os.IsNotExist(err) {
		t.Errorf("refused runs wrote %s (%v)", adapters, err)
	}
}

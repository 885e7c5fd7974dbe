package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels/cuda/cudafake"
)

// fakeCUDA compiles the C stand-ins for libcuda and libcublas; without a C
// compiler the test is skipped, unless CI is set.
func fakeCUDA(t *testing.T) cudafake.Libs {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc" // as cgo
	}
	libs, err := cudafake.BuildLibs(context.Background(), cc, t.TempDir())
	if errors.Is(err, exec.ErrNotFound) && os.Getenv("CI") == "" {
		t.Skipf("no C compiler to build the fake CUDA libraries: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return libs
}

// TestDeviceCUDA runs hone-train --device cuda as a process: where the
// driver library, cuBLAS or a device is missing it exits 1 naming which;
// where all are there but the driver refuses the kernels (the C stand-in of
// libcuda loads its toy module only) it exits 1 naming the failing call, and
// trains nothing. --device tpu is a usage error.
// The libraries' own sonames are tried too, with whatever this machine has.
func TestDeviceCUDA(t *testing.T) {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	good := filepath.Join(dir, "s", "a.parquet")
	libs := fakeCUDA(t)
	nowhere := filepath.Join(dir, "absent", "libcuda.so.1")
	out := filepath.Join(dir, "adapters")
	for _, tc := range []struct {
		name        string
		env         []string
		sub, device string // "grpo", "cuda" when empty
		code        int
		says        []string
	}{
		{"no driver", []string{"HONE_LIBCUDA=" + nowhere}, "", "", 1,
			[]string{"CUDA backend unavailable: no CUDA driver library (tried " + nowhere + ")", "HONE_LIBCUDA"}},
		{"no cuBLAS", []string{"HONE_LIBCUDA=" + libs.Driver, "HONE_LIBCUBLAS=" + nowhere}, "", "", 1,
			[]string{"no cuBLAS library (tried " + nowhere + ")", "HONE_LIBCUBLAS"}},
		{"no device", []string{"HONE_LIBCUDA=" + libs.Driver, "HONE_LIBCUBLAS=" + libs.BLAS, "HONE_FAKE_CUDA_DEVICES=0"}, "", "", 1,
			[]string{"no CUDA device: cuInit: CUDA_ERROR_NO_DEVICE"}},
		{"device there", []string{"HONE_LIBCUDA=" + libs.Driver, "HONE_LIBCUBLAS=" + libs.BLAS}, "", "", 1,
			[]string{"CUDA backend:", "cuModuleLoadData: CUDA_ERROR_INVALID_IMAGE"}},
		{"sft device there", []string{"HONE_LIBCUDA=" + libs.Driver, "HONE_LIBCUBLAS=" + libs.BLAS}, "sft", "", 1,
			[]string{"cuModuleLoadData: CUDA_ERROR_INVALID_IMAGE"}},
		{"sonames", nil, "", "", 1, []string{"CUDA backend"}}, // whatever this machine has
		{"bad device", nil, "", "tpu", 2, []string{`--device "tpu": want cpu or cuda`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub, device := cmp.Or(tc.sub, "grpo"), cmp.Or(tc.device, "cuda")
			run := strings.ReplaceAll(tc.name, " ", "-")
			args := []string{sub, "--device", device, "--model", md, "--run", run, "--out", out, "--threads", "1", good}
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), append(tc.env, "HONE_TRAIN_TEST_MAIN=1")...)
			var buf bytes.Buffer
			cmd.Stdout, cmd.Stderr = &buf, &buf
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.code {
				t.Fatalf("%v: %v, want exit %d\n%s", args, err, tc.code, buf.String())
			}
			for _, s := range tc.says {
				if !strings.Contains(buf.String(), s) {
					t.Errorf("output does not say %q:\n%s", s, buf.String())
				}
			}
			if _, err := os.Stat(filepath.Join(out, run)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("--device cuda left a run folder %s (%v)", filepath.Join(out, run), err)
			}
		})
	}
}

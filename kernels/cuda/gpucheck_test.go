package cuda_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGPUCheckScript runs gpucheck/run.sh (what `make gpu-check` ships)
// with stand-ins for the device machine's commands — nvidia-smi, python3
// with a cuBLAS wheel in its site-packages, compute-sanitizer and the test
// binary — on a PATH holding nothing else but the shell tools it uses: it
// runs every step with the test binary's hardware tests switched on and
// the wheel's cuBLAS, unpacks the hone-cmds step's binaries and runs its
// test binary on them, writes a summary line per step, says what it does
// not check, and exits 1 when a step fails.
func TestGPUCheckScript(t *testing.T) {
	bin := t.TempDir()
	for _, tool := range []string{"bash", "env", "timeout", "date", "find", "sort", "head", "mkdir", "tee", "dirname", "cat", "grep", "printf", "chmod", "mv", "awk"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			if os.Getenv("CI") == "" {
				t.Skipf("%v", err)
			}
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	site := t.TempDir()
	cublas := filepath.Join(site, "nvidia", "cu13", "lib", "libcublas.so.13")
	if err := os.MkdirAll(filepath.Dir(cublas), 0o755); err != nil {
		t.Fatal(err)
	}
	cublasLt := filepath.Join(filepath.Dir(cublas), "libcublasLt.so.13") // beside it: run.sh takes it as HONE_LIBCUBLASLT
	for _, lib := range []string{cublas, strings.TrimSuffix(cublas, "13") + "12", cublasLt} {
		if err := os.WriteFile(lib, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stub := func(dir, name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!"+filepath.Join(bin, "bash")+"\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The GPU's name alone (run.sh's look-up of its bf16 peak) is GPU_NAME's,
	// an H200 by default.
	stub(bin, "nvidia-smi", `case "$*" in *"--query-gpu=name --format=csv,noheader"*) echo "${GPU_NAME:-NVIDIA H200}";;
  *) echo "NVIDIA H200 $*";; esac`)
	stub(bin, "ldconfig", `exit 0`) // no cuBLAS on the loader's path
	// python3 -c CODE NAMES...: with lzma in CODE, "unpacks" each NAME.xz
	// (here a plain script) into NAME; with NO_LZMA set it fails, as a Python
	// without lzma would, and the xz stand-in unpacks instead.
	stub(bin, "python3", `case "$*" in *getsitepackages*) echo `+site+`;; *torch_bench.py*) echo "RESULT stub row $*";;
  *lzma*) [ -z "$NO_LZMA" ] || exit 1; shift 2; for n; do cat "$n.xz" > "$n" && chmod 755 "$n" && echo "unpacked $n"; done;;
  *) echo "torch stub";; esac`)
	stub(bin, "xz", `[ "$1" = -dc ] && exec cat "$2"`)
	stub(bin, "compute-sanitizer", `echo "sanitizer $1 $2"; shift 4; exec "$@"`)
	run := func(testExit, cmdExit int, env ...string) (string, string, error) {
		dir := t.TempDir()
		script, err := os.ReadFile("gpucheck/run.sh")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "run.sh"), script, 0o755); err != nil {
			t.Fatal(err)
		}
		// The binaries come as NAME.xz (make gpu-check): run.sh unpacks them.
		if err := os.MkdirAll(filepath.Join(dir, "cmdcheck"), 0o755); err != nil {
			t.Fatal(err)
		}
		// FAIL_TEST names a test the hardware tests' output says failed.
		stub(dir, "cuda.test.xz", `echo "HONE_CUDA_TEST=$HONE_CUDA_TEST HONE_LIBCUBLAS=$HONE_LIBCUBLAS args: $*"
[ -z "$FAIL_TEST" ] || echo "--- FAIL: $FAIL_TEST (0.01s)"; exit `+string(rune('0'+testExit)))
		// A 7B row's tokens/s by its attention: tc3k64 fastest, then tc3,
		// gemm, tc2 and tc1 (the default), 500 more on cuBLASLt unless
		// LT_SLOW is set; its first step's figures agree
		// with tc1's but where WRONG names the attention (k's probe off by
		// 0.6 of k's norm), WRONG_LP (its mean logprob by 1.7e-3) or
		// WRONG_NORM (v's norm by 0.12).
		stub(dir, "modelbench.xz", `case "$FAIL_EDGES $*" in 1*"--cuda-sync edges"*) echo "cuda: stream-ordered step failed"; exit 1;; esac
echo "BENCH stub $*"; tps=1000; k=tc1
case "$*" in *"--attention-kernel tc3k64 "*) tps=3000 k=tc3k64;; *"--attention-kernel tc3 "*) tps=2.5e3 k=tc3;; *"--attention-kernel gemm "*) tps=2000 k=gemm;; *"--attention-kernel tc2 "*) tps=1500 k=tc2;; esac
case "$LT_SLOW $*" in " "*"--gemm cublaslt"*) tps=$((tps + 500));; esac
probe=3.1e-2 lp=-11.93 norm=0.5; [ "$WRONG" != "$k" ] || probe=0.091; [ "$WRONG_LP" != "$k" ] || lp=-11.95; [ "$WRONG_NORM" != "$k" ] || norm=0.56
echo "BENCH {\"kind\":\"train\",\"tokens_per_s\":$tps,\"first_logprob_mean\":$lp,\"first_grad_norm\":2.5,\"first_q_grad_norm\":0.2,\"first_q_grad_probe\":-0.1,\"first_k_grad_norm\":1e-1,\"first_k_grad_probe\":$probe,\"first_v_grad_norm\":$norm,\"first_v_grad_probe\":0.3}"`)
		stub(dir, "model.test.xz", `echo "HONE_CUDA_TEST=$HONE_CUDA_TEST in $PWD args: $*"`)
		stub(dir, "cmdcheck/hone-train.xz", `exit 0`)
		stub(dir, "cmdcheck/hone-serve.xz", `exit 0`)
		stub(dir, "cmdcheck/cmdcheck.test.xz", `"$HONE_CMDCHECK_DIR/hone-train" && "$HONE_CMDCHECK_DIR/hone-serve" || exit 1
echo "HONE_CMDCHECK_DIR=$HONE_CMDCHECK_DIR HONE_CMDCHECK_OUT=$HONE_CMDCHECK_OUT HONE_LIBCUBLAS=$HONE_LIBCUBLAS args: $*"
echo "CMDCHECK sft float32: stub"; echo "CMDCHECK total 1s"; exit `+string(rune('0'+cmdExit)))
		if err := os.MkdirAll(filepath.Join(dir, "train", "model"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "COMMIT"), []byte("abc123\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(filepath.Join(bin, "bash"), filepath.Join(dir, "run.sh"))
		cmd.Env = append([]string{"PATH=" + bin, "HOME=" + dir}, env...)
		out, err := cmd.CombinedOutput()
		summary, rerr := os.ReadFile(filepath.Join(dir, "results", "summary.txt"))
		if rerr != nil {
			t.Fatalf("%v\n%s", rerr, out)
		}
		hw, rerr := os.ReadFile(filepath.Join(dir, "results", "hardware-test.log"))
		if rerr != nil {
			t.Fatalf("%v\n%s", rerr, out)
		}
		if testExit == 0 && !strings.Contains(string(summary), "model-golden    SKIPPED") {
			mg, rerr := os.ReadFile(filepath.Join(dir, "results", "model-golden.log"))
			if rerr != nil {
				t.Fatalf("%v\n%s", rerr, out)
			}
			if want := "HONE_CUDA_TEST=1 in " + filepath.Join(dir, "train", "model") + " args: -test.run GoldenCUDAOnHardware -test.v"; !strings.Contains(string(mg), want) {
				t.Errorf("model-golden.log lacks %q:\n%s", want, mg)
			}
		}
		if testExit == 0 && !strings.Contains(string(summary), "hone-cmds       SKIPPED") {
			cl, rerr := os.ReadFile(filepath.Join(dir, "results", "hone-cmds.log"))
			if rerr != nil {
				t.Fatalf("%v\n%s", rerr, out)
			}
			cmdcheck := filepath.Join(dir, "cmdcheck")
			for _, want := range []string{"HONE_CMDCHECK_DIR=" + cmdcheck + " HONE_CMDCHECK_OUT=" + filepath.Join(dir, "results", "hone-cmds") +
				" HONE_LIBCUBLAS=" + cublas + " args: -test.run CommandsOnDevice -test.v -test.timeout 85s"} {
				if !strings.Contains(string(cl), want) {
					t.Errorf("hone-cmds.log lacks %q:\n%s", want, cl)
				}
			}
		}
		if testExit == 0 {
			ul, rerr := os.ReadFile(filepath.Join(dir, "results", "unpack.log"))
			if rerr != nil {
				t.Fatalf("%v\n%s", rerr, out)
			}
			for _, n := range []string{"cuda.test", "model.test", "modelbench", "cmdcheck/cmdcheck.test", "cmdcheck/hone-serve", "cmdcheck/hone-train"} {
				if !strings.Contains(string(ul), "unpacked "+filepath.Join(dir, n)) {
					t.Errorf("unpack.log lacks %s:\n%s", n, ul)
				}
			}
		}
		// The hardware tests' logs: hardware-test's, then hardware-full's
		// where it ran.
		full, _ := os.ReadFile(filepath.Join(dir, "results", "hardware-full.log"))
		return string(summary), string(hw) + string(full), err
	}

	summary, hw, err := run(0, 0)
	if err != nil {
		t.Fatalf("run.sh: %v\n%s", err, summary)
	}
	for _, want := range []string{"abc123", "nvidia-smi      ok", "gpu             ok", "cuBLAS: " + cublas, "torch           ok",
		"hardware-test   ok", "memcheck        ok", "model-golden    ok", "torch-05b       ok", "torch-7b        ok",
		"hone-05b-train  ok", "hone-05b-decode ok", "hone-7b-train   ok", "hone-7b-tc2     ok", "hone-7b-tc3     ok", "hone-7b-gemm    ok", "unpack          ok      6 files",
		"hardware-full   ok", "hone-05b-decode-async ok",
		// the fastest checked attention's row: stream-ordered, unprofiled
		"fastest checked 7B attention: tc3k64\n", "hone-7b-best    ok",
		"    stub worker train --shape 7b --batch 8 --seq 1024 --rank 16 --steps 3 --attention-kernel tc3k64 --device cuda --dtype bf16 --compute bf16 --cuda-sync edges --libcuda ",
		// and once more with gate and up held as bfloat16
		"hone-7b-best-gateup ok", "    stub worker train --shape 7b --batch 8 --seq 1024 --rank 16 --steps 3 --attention-kernel tc3k64 --bf16-gate-up --device cuda --dtype bf16 --compute bf16 --cuda-sync edges --libcuda ",
		// the commands' step and its CMDCHECK lines
		"hone-cmds       ok", "    sft float32: stub", "    total 1s",
		// modelbench's BENCH lines, copied into the summary
		"    stub worker train --shape 05b --batch 8 --seq 1024 --rank 16 --steps 3 --device cuda --dtype bf16 --compute bf16 --profile-ops --libcuda  --libcublas " + cublas,
		// the H200's bf16 peak, looked up by its name, for the OPS summaries
		"bf16 peak: 989 TFLOP/s (NVIDIA H200)", "--libcublas " + cublas + " --peak-tflops 989\n",
		"    stub worker decode --shape 05b --batch 32 --prompt 128 --tokens 128 --device cuda",
		"    stub worker train --shape 7b --batch 8 --seq 1024 --rank 16 --steps 2 --device cuda",
		"    stub worker train --shape 7b --batch 8 --seq 1024 --rank 16 --steps 2 --attention-kernel gemm --device cuda",
		// the last row: the 7B step's linear GEMMs on cuBLASLt, found beside cuBLAS
		"hone-7b-lt      ok", "    stub worker train --shape 7b --batch 8 --seq 1024 --rank 16 --steps 2 --attention-kernel tc3k64 --gemm cublaslt --libcublaslt " + cublasLt + " --device cuda",
		// faster than GemmEx on that attention: the best row again on cuBLASLt
		"cuBLASLt beat cublasGemmEx on tc3k64 (3500 against 3000 tokens/s, profiled)\n", "hone-7b-best-lt ok",
		"    stub worker train --shape 7b --batch 8 --seq 1024 --rank 16 --steps 3 --attention-kernel tc3k64 --gemm cublaslt --libcublaslt " + cublasLt + " --device cuda --dtype bf16 --compute bf16 --cuda-sync edges",
		// torch_bench.py's RESULT lines, copied into the summary (the stub echoes its arguments)
		"    stub row ", "/torch_bench.py --device cuda --out ",
		"/results/torch-05b.jsonl --shape 05b --impl both --measure golden,same-math,train,decode --golden ",
		"/golden-qwen2 --warmup 2 --steps 5", "/results/torch-7b.jsonl --shape 7b --measure train --warmup 1 --steps 3",
		"every step passed"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
	if want := "HONE_CUDA_TEST=1 HONE_LIBCUBLAS=" + cublas + " args: -test.run OnHardware -test.short -test.v"; !strings.Contains(hw, want) {
		t.Errorf("hardware-test.log lacks %q:\n%s", want, hw)
	}
	if want := "args: -test.run OnHardware -test.v -test.timeout 170s"; !strings.Contains(hw, want) {
		t.Errorf("hardware-full.log lacks %q (Go's timeout 10 s inside the step's 180 s limit):\n%s", want, hw)
	}
	if strings.Contains(summary, "hone-7b-async") {
		t.Errorf("summary has the retired hone-7b-async row (hone-7b-best is stream-ordered):\n%s", summary)
	}

	// A first step that disagrees with tc1's takes that attention out of
	// the choice.
	summary, _, err = run(0, 0, "WRONG=tc3k64", "WRONG_LP=gemm", "WRONG_NORM=tc2")
	for _, want := range []string{"    hone-7b-tc3k64's first step disagrees with hone-7b-train's: logprob_mean -11.93 against -11.93, q_grad_norm 0.2 against 0.2, q_grad_probe -0.1 against -0.1, k_grad_norm 1e-1 against 1e-1, k_grad_probe 0.091 against 3.1e-2, v_grad_norm 0.5 against 0.5, v_grad_probe 0.3 against 0.3\n",
		"    hone-7b-gemm's first step disagrees with hone-7b-train's: logprob_mean -11.95 against -11.93,",
		"    hone-7b-tc2's first step disagrees with hone-7b-train's: logprob_mean -11.93 against -11.93, q_grad_norm 0.2 against 0.2, q_grad_probe -0.1 against -0.1, k_grad_norm 1e-1 against 1e-1, k_grad_probe 3.1e-2 against 3.1e-2, v_grad_norm 0.56 against 0.5,",
		"fastest checked 7B attention: tc3\n", "--steps 3 --attention-kernel tc3 --device cuda --dtype bf16 --compute bf16 --cuda-sync edges"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
	if err != nil {
		t.Errorf("run.sh with a disagreeing attention row: %v (the row itself passed)", err)
	}
	if strings.Contains(summary, "hone-7b-best-op") {
		t.Errorf("hone-7b-best-op ran though hone-7b-best gave its figure:\n%s", summary)
	}

	// cuBLASLt no faster: no hone-7b-best-lt.
	summary, _, err = run(0, 0, "LT_SLOW=1")
	if err != nil || strings.Contains(summary, "hone-7b-best-lt") || strings.Contains(summary, "cuBLASLt beat") {
		t.Errorf("run.sh with cuBLASLt no faster: %v, want no hone-7b-best-lt:\n%s", err, summary)
	}

	// Where the stream-ordered step fails, the same step runs with every
	// op synchronized.
	summary, _, err = run(0, 0, "FAIL_EDGES=1")
	for _, want := range []string{"hone-7b-best    FAILED  rc=1", "hone-7b-best-op ok",
		"    stub worker train --shape 7b --batch 8 --seq 1024 --rank 16 --steps 3 --attention-kernel tc3k64 --device cuda --dtype bf16 --compute bf16 --cuda-sync op --libcuda ",
		"    stub worker train --shape 7b --batch 8 --seq 1024 --rank 16 --steps 3 --attention-kernel tc3k64 --bf16-gate-up --device cuda --dtype bf16 --compute bf16 --cuda-sync op --libcuda ",
		"a step FAILED"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
	if xe := (*exec.ExitError)(nil); !errors.As(err, &xe) || xe.ExitCode() != 1 {
		t.Errorf("run.sh with a failing stream-ordered step: %v, want exit status 1", err)
	}

	// A failing hardware test of tc3 and tc3k64 takes them out of the
	// choice: gemm's row is the fastest left.
	summary, _, err = run(1, 0, "FAIL_TEST=TestAttentionTC3OnHardware")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("run.sh with a failing hardware test: %v, want exit status 1", err)
	}
	for _, want := range []string{"hardware-test   FAILED  rc=1", "a step FAILED", "fastest checked 7B attention: gemm\n",
		"    hone-7b-tc3k64: TestAttentionTC3OnHardware failed in hardware-test, not a candidate",
		"--steps 3 --attention-kernel gemm --device cuda --dtype bf16 --compute bf16 --cuda-sync edges"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}

	// Where Python cannot unpack, the xz command does; where neither can,
	// the run fails.
	// (On a GPU whose bf16 peak run.sh does not know: no --peak-tflops.)
	summary, _, err = run(0, 0, "NO_LZMA=1", "GPU_NAME=NVIDIA H200 NVL")
	if err != nil || !strings.Contains(summary, "unpack          ok      6 files") || !strings.Contains(summary, "every step passed") {
		t.Errorf("run.sh unpacking with xz: %v\n%s", err, summary)
	}
	if !strings.Contains(summary, "bf16 peak: unknown for GPU 'NVIDIA H200 NVL'") || strings.Contains(summary, "--peak-tflops") {
		t.Errorf("run.sh on an H200 NVL: want no bf16 peak and no --peak-tflops:\n%s", summary)
	}
	if err := os.Remove(filepath.Join(bin, "xz")); err != nil {
		t.Fatal(err)
	}
	summary, _, err = run(1, 0, "NO_LZMA=1")
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(summary, "unpack          FAILED") {
		t.Errorf("run.sh unable to unpack: %v, want exit status 1 and unpack FAILED\n%s", err, summary)
	}

	// A failing hone-cmds step fails the run, its lines still in the summary
	// (on an A100: its bf16 peak).
	summary, _, err = run(0, 1, "GPU_NAME=NVIDIA A100-SXM4-80GB")
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("run.sh with a failing hone-cmds step: %v, want exit status 1", err)
	}
	for _, want := range []string{"hone-cmds       FAILED  rc=1", "    sft float32: stub", "hone-7b-train   ok", "a step FAILED",
		"bf16 peak: 312 TFLOP/s (NVIDIA A100-SXM4-80GB)", " --peak-tflops 312\n"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}

	// With less than 30 s of the budget left the PyTorch steps are skipped,
	// and that counts as a failure.
	summary, _, err = run(0, 0, "HONE_GPU_CHECK_BUDGET_S=20")
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("run.sh out of budget: %v, want exit status 1", err)
	}
	for _, want := range []string{"hardware-test   ok", "model-golden    SKIPPED", "hone-cmds       SKIPPED", "hone-05b-train  SKIPPED", "torch-05b       SKIPPED", "hone-7b-train   SKIPPED", "torch-7b        SKIPPED", "hone-7b-tc2     SKIPPED", "hone-7b-tc3     SKIPPED", "hone-7b-gemm    SKIPPED", "hone-7b-lt      SKIPPED", "hone-7b-best    SKIPPED no 7B row gave tokens/s", "hardware-full   SKIPPED", "of the 20s budget", "a step FAILED"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
}

#!/usr/bin/env bash
# The bf16 compute mode's CPU check (issue #23): on a machine with
# AVX512-BF16 and AMX, checks every bfloat16 GEMM micro-kernel (AMX,
# AVX512-BF16, portable) and times them against float32. `make
# cpu-bf16-check` builds this folder (bin/cpu-bf16-check/: cpu.test,
# gemmbench and modelbench built with cgo, and lib/ with Debian's OpenBLAS
# and the libraries it needs); copy it over and run
#
#   bash run.sh [RESULTS_DIR]
#
# Go is not needed there. Everything runs pinned to cores 0 and 1
# (HONE_BF16_CPUS), as the 2-vCPU machines of the targets; the kernel
# benchmark runs on core 0 alone. Steps, each under a time limit, output in
# RESULTS_DIR/STEP.log (default: results/ beside this script), one line each
# in summary.txt, which also collects the figures:
#   cpu      the CPU's bf16/AMX flags and the kernel version
#   tests    cpu.test: every kernel against float64 sums of the rounded
#            operands on the block and tile edges (TestBF16GEMMBlocks,
#            TestBF16GEMMSharedOperands), AMX detection against
#            /proc/cpuinfo (TestBF16AMXDetect), the decode kernel, and the
#            conformance suite on each kernel (TestConformanceBF16). A
#            kernel the CPU lacks is a SKIP naming why; a wrong one FAILs.
#   kernel   cpu.test's BenchmarkBF16GEMM (one core, one call: AMX,
#            AVX512-BF16, float32 built-in AVX-512; OpenBLAS too with
#            HONE_BF16_BLAS=1, slow there), BenchmarkBF16Rows (the decode
#            kernels: AMX, and AVX512-BF16's panel and dot-product ones, at
#            8 to 64 inputs) and
#            BenchmarkBF16Overhead (rounding A, packing B), GFLOP/s
#   gemm     gemmbench --sections bf16: the backend's LinearForwardBF16 and
#            LinearBackwardBF16 on two workers, f32 and each bf16 kernel
#   train-*  modelbench's training worker on the 0.5B shape (HONE_BF16_BATCH
#            sequences of 256 tokens, default 2, one timed step after one
#            warm-up): float32 weights and compute, then bf16 weights and
#            compute on AMX and on AVX512-BF16 (HONE_BF16_ROWS, default
#            "f32 amx avx512bf16"); tokens/s. HONE_BF16_PROFILE=1 writes
#            each row's CPU profile (timed part) to train-ROW.pprof
#   decode-* modelbench's decode worker on the 0.5B shape at batch 32 (16
#            prompt tokens, 16 timed steps), as make bench's
#            decode-05b-b32-bf16 / -bf16c rows: bfloat16 weights with f32
#            compute (bf16w), then bf16 compute on AMX and on AVX512-BF16
#            (HONE_BF16_DECODE, default "bf16w amx avx512bf16"; "" skips)
# Every step has a time limit (tests 150 s, benchmarks and training rows
# 120 s, decode rows 60 s); on the lent Xeon an earlier form of this run
# (training rows amx and f32 at batch 4, no decode rows) took 58 s. It exits
# 1 when a step failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
res=${1:-$here/results}
mkdir -p "$res"
summary=$res/summary.txt
: >"$summary"
failed=0
cpus=${HONE_BF16_CPUS:-0,1}
batch=${HONE_BF16_BATCH:-2}
rows=${HONE_BF16_ROWS:-f32 amx avx512bf16}
decode_rows=${HONE_BF16_DECODE-bf16w amx avx512bf16}
kernbench='BF16Overhead|BF16Rows|BF16GEMM/.*/.*/(amx|avx512bf16|f32-avx512)$'
if [ "${HONE_BF16_BLAS:-0}" = 1 ]; then kernbench='BF16Overhead|BF16Rows|BF16GEMM'; fi
export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
t0=$(date +%s)

note() { echo "$*" | tee -a "$summary"; }

# step NAME LIMIT_S CMD...: runs CMD under a time limit, its output in NAME.log.
step() {
	local name=$1 limit=$2
	shift 2
	local start rc what
	start=$(date +%s)
	echo "== $* (limit ${limit}s)" >"$res/$name.log"
	timeout -k 5 "$limit" "$@" >>"$res/$name.log" 2>&1
	rc=$?
	what=ok
	if [ "$rc" -ne 0 ]; then
		failed=1
		what=FAILED
		if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then what=TIMEOUT; fi
	fi
	note "$(printf '%-18s %-7s rc=%-3d %4ds  %s' "$name" "$what" "$rc" "$(($(date +%s) - start))" "$name.log")"
	return "$rc"
}

note "Hone bf16 CPU check, $(date -u +%FT%TZ), $(cat "$here/COMMIT" 2>/dev/null || echo 'commit unknown'), cores $cpus"

step cpu 10 bash -c 'uname -r; grep -m1 "model name" /proc/cpuinfo; grep -m1 "^flags" /proc/cpuinfo | tr " " "\n" | grep -E "^(avx512f|avx512bw|avx512_bf16|amx_tile|amx_bf16|amx_int8)$" | tr "\n" " "; echo'
sed 's/^/    /' "$res/cpu.log" | tail -n +2 | tee -a "$summary"

step tests 150 taskset -c "$cpus" "$here/cpu.test" -test.run 'BF16|PickBF16' -test.v -test.timeout 140s
# The verdict of each test and of each kernel's subtests (a SKIP says why in the log).
grep -E '^(--- |    --- )(PASS|FAIL|SKIP): [A-Za-z0-9]+(/kind=[^/ ]+|/kernel=[^/ ]+)? ' "$res/tests.log" | sed 's/^/    /' | tee -a "$summary"
grep -E -o '(gemm_bf16|cpu)_test.go:[0-9]+: (this CPU|/proc/cpuinfo|bfloat16 kernel).*' "$res/tests.log" | sort -u | sed 's/^/    why: /' | tee -a "$summary"

step kernel 120 env OPENBLAS_NUM_THREADS=1 taskset -c "${cpus%%,*}" "$here/cpu.test" -test.run '^$' -test.bench "$kernbench" -test.benchtime 5x -test.v
grep -E '^Benchmark|--- SKIP' "$res/kernel.log" | sed 's/^/    /' | tee -a "$summary"

step gemm 120 taskset -c "$cpus" "$here/gemmbench" --sections bf16
grep -E '^T=|skipped' "$res/gemm.log" | sed 's/^/    /' | tee -a "$summary"

for row in $rows; do
	args=(--dtype f32)
	if [ "$row" != f32 ]; then args=(--dtype bf16 --compute bf16 --bf16-kernel "$row"); fi
	if [ "${HONE_BF16_PROFILE:-0}" = 1 ]; then args+=(--cpuprofile "$res/train-$row.pprof"); fi
	step "train-$row" 120 taskset -c "$cpus" "$here/modelbench" worker train --shape 05b --batch "$batch" --seq 256 --steps 1 "${args[@]}"
	grep '^BENCH ' "$res/train-$row.log" | sed 's/^/    /' | tee -a "$summary"
done

for row in $decode_rows; do
	args=(--dtype bf16)
	if [ "$row" != bf16w ]; then args+=(--compute bf16 --bf16-kernel "$row"); fi
	step "decode-$row" 60 taskset -c "$cpus" "$here/modelbench" worker decode --shape 05b --batch 32 --prompt 16 --tokens 16 "${args[@]}"
	grep '^BENCH ' "$res/decode-$row.log" | sed 's/^/    /' | tee -a "$summary"
done

note "total $(($(date +%s) - t0))s; $([ "$failed" -eq 0 ] && echo 'every step passed' || echo 'a step FAILED')"
exit "$failed"

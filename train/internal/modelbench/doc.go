// Command modelbench times train/model next to the PyTorch reference
// (testdata/golden/model/reference.py) on the same machine, in one run:
//
//   - a LoRA training step (forward + backward + AdamW on the adapter, rank 8
//     on all projections) on a tiny shape and on the Qwen2.5-0.5B shape;
//   - greedy KV-cache decoding at batch 1, 8 and 32 on the 0.5B shape, with
//     float32 and bfloat16 weights;
//
// each in tokens/s, with the achieved GFLOP/s against the SGEMM peak of
// kernels/cpu measured at the start of the same run, and the peak RSS of
// each contender. Every measurement runs in its own child process (this
// binary's hidden "worker" subcommand for Hone, /usr/bin/python3 for
// PyTorch) so that the RSS, read from the child's rusage, is its own.
//
// Decode at small batch is bound by the memory's bandwidth, which on a
// shared virtual machine moves from minute to minute. So after its timed
// steps, Hone's decode worker runs as many more, each after a plain read of
// all its weights' bytes on the same number of threads, and reports the
// tokens/s such a read allows and the median of step time over read time:
// a last table lists both for every decode row. A step/read near 1 says the
// row ran at the memory's speed of that minute.
//
// The BLAS environment is printed and never changed: both contenders
// inherit it. PyTorch gets torch.set_num_threads(--torch-threads; by
// default as many as Hone's kernel workers, GOMAXPROCS) and, like
// Hone, OMP_WAIT_POLICY=PASSIVE when that is unset. For PyTorch's best
// setup run with OPENBLAS_NUM_THREADS=1; for OpenBLAS's AVX-512 kernels:
//
//	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 go run ./train/internal/modelbench
//	go run ./train/internal/modelbench --quick
//
// The device check (make gpu-check, kernels/cuda/gpucheck/run.sh) runs the
// worker by itself on a GPU: `modelbench worker train|decode --device cuda`
// on kernels/cuda's Backend, with a 7b shape (Qwen2.5-7B's) besides tiny and
// 05b, --rank for the adapter, and the bytes the backend had allocated in
// its BENCH line. Its decode chooses each step's greedy tokens on the
// device (kernels.RowChooser) by default there, and with --choose host by
// the host's argmax of the logits copied over, as every decode figure
// before BENCH's "choose" field was measured. It ran on one H200 once: kernels/cuda/gpucheck/RESULTS.md.
// With --profile-ops it prints OPS lines, cuda.Backend's time per op over
// the timed steps, with the TFLOP/s of the ops with products (their FLOPs
// counted from the ops' shapes: cuda.Backend.StartProfile) and a
// "(products)" summary of them, which --peak-tflops sets against the
// device's bf16 peak; the FLOP counts have not run on a GPU yet.
//
// FLOPs are counted, not measured: a training step is 2 × the forward
// matmul FLOPs (the forward and the input gradient; base weights get no
// gradient) plus 3 × the causal attention FLOPs; a decode token is 2 × the
// weights it multiplies plus its attention over the cache. LoRA and
// element-wise work are left out, so GFLOP/s slightly understate the work.
package main

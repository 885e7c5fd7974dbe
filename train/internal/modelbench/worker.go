package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/train/model"
)

// shapeConfig returns the model shapes of reference.py's BENCH_SHAPES.
func shapeConfig(shape string) (model.Config, error) {
	switch shape {
	case "tiny":
		return model.Config{Family: "qwen2", Vocab: 4096, Hidden: 256, Intermediate: 688, Layers: 4, Heads: 8, KVHeads: 4,
			HeadDim: 32, RMSNormEps: 1e-6, QKVBias: true, RoPE: kernels.RoPEConfig{Theta: 1e6}}, nil
	case "05b":
		return model.Config{Family: "qwen2", Vocab: 151936, Hidden: 896, Intermediate: 4864, Layers: 24, Heads: 14, KVHeads: 2,
			HeadDim: 64, RMSNormEps: 1e-6, QKVBias: true, TieEmbeddings: true, RoPE: kernels.RoPEConfig{Theta: 1e6}}, nil
	case "7b":
		// Qwen2.5-7B's shape, for the device check (make gpu-check) only:
		// its weights take 15 GB in bfloat16.
		return model.Config{Family: "qwen2", Vocab: 152064, Hidden: 3584, Intermediate: 18944, Layers: 28, Heads: 28, KVHeads: 4,
			HeadDim: 128, RMSNormEps: 1e-6, QKVBias: true, RoPE: kernels.RoPEConfig{Theta: 1e6}}, nil
	}
	return model.Config{}, fmt.Errorf("unknown shape %q (want tiny, 05b, 7b)", shape)
}

// matmulParams is the number of weights one token multiplies in a forward
// pass: every projection and the output layer.
func matmulParams(c model.Config) float64 {
	qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	perLayer := c.Hidden*(qd+2*kvd) + qd*c.Hidden + 3*c.Hidden*c.Intermediate
	return float64(c.Layers*perLayer + c.Vocab*c.Hidden)
}

// flopsPerToken is the counted work of one token of row r (see doc.go).
func flopsPerToken(r row, o Options) float64 {
	c, err := shapeConfig(r.shape)
	if err != nil {
		return 0
	}
	qd := float64(c.Heads * c.HeadDim)
	if r.train {
		// Causal attention: QKᵀ and PV over on average (T+1)/2 keys.
		att := 2 * 2 * qd * float64(o.Seq+1) / 2 * float64(c.Layers)
		return 2*2*matmulParams(c) + 3*att
	}
	ctx := float64(o.Prompt) + float64(o.Tokens)/2
	return 2*matmulParams(c) + 2*2*qd*ctx*float64(c.Layers)
}

// workerResult is the BENCH line a worker prints (the same keys as
// reference.py's).
type workerResult struct {
	Kind       string  `json:"kind"`
	Shape      string  `json:"shape"`
	Batch      int     `json:"batch"`
	Dtype      string  `json:"dtype,omitempty"`
	TokensPerS float64 `json:"tokens_per_s"`
	FirstS     float64 `json:"first_step_s"`
	Checkpoint bool    `json:"checkpoint,omitempty"`
	// BF16GateUp is --bf16-gate-up (model.TrainOptions.GateUpBF16).
	BF16GateUp bool   `json:"bf16_gate_up,omitempty"`
	Device     string `json:"device,omitempty"`
	Rank       int    `json:"lora_rank,omitempty"`
	// DeviceBytes is the device memory the backend had allocated after the
	// first step's backward (weights, adapter, moments, activations; not
	// cuBLAS's workspace): cuda only.
	DeviceBytes int64 `json:"device_alloc_bytes,omitempty"`
	// Decode only: see memorySpeed.
	ReadTokensPerS float64 `json:"read_tokens_per_s,omitempty"`
	StepOverRead   float64 `json:"step_over_read,omitempty"`
	// CUDASync is --cuda-sync on a device: "op" (every op synchronized)
	// or "edges" (stream-ordered, cuda.Backend.SetSyncEachOp(false)).
	CUDASync string `json:"cuda_sync,omitempty"`
	// GEMM is --gemm on a device: "cublas" (cublasGemmEx) or "cublaslt"
	// (cuda.Ops.SetGEMMLibrary).
	GEMM string `json:"gemm,omitempty"`
	// Choose is where decode chose each token (--choose): "host" (the
	// argmax of logits copied to the host each step; every figure before
	// this field was measured so) or "device" (kernels.RowChooser on the
	// logits in the backend's memory, 4 values a sequence copied back).
	Choose string `json:"choose,omitempty"`
	// Train only, from the untimed first step (the adapter's B still zero,
	// so its forward is the base model's): the mean log-probability of the
	// targets, and the L2 norm of the adapter's gradient after its
	// backward. Two runs of one shape, batch and seed on different kernels
	// (the device check's 7B rows on each training attention) should agree
	// within their precision; a kernel that is wrong at that shape, or
	// gives NaN, shows here: the worker fails on a value that is not
	// finite and applies no other bound. The q, k and v projections'
	// gradients pass through the attention's backward before any other
	// product: First{Q,K,V}GradNorm are the norms of each one's, and
	// First{Q,K,V}GradProbe their sums with fixed pseudo-random signs
	// (projectionGradProbe), which two correct kernels give within a small
	// part of that norm and a wrong one, even of the right scale, does not.
	// Each is its own: at the start of training v's gradient is most of
	// the three, so a sum over q, k and v would hide a wrong dk.
	FirstLogprob    float64 `json:"first_logprob_mean,omitempty"`
	FirstGradNorm   float64 `json:"first_grad_norm,omitempty"`
	FirstQGradNorm  float64 `json:"first_q_grad_norm,omitempty"`
	FirstQGradProbe float64 `json:"first_q_grad_probe,omitempty"`
	FirstKGradNorm  float64 `json:"first_k_grad_norm,omitempty"`
	FirstKGradProbe float64 `json:"first_k_grad_probe,omitempty"`
	FirstVGradNorm  float64 `json:"first_v_grad_norm,omitempty"`
	FirstVGradProbe float64 `json:"first_v_grad_probe,omitempty"`
}

// worker runs one Hone measurement in this process: "train …" or "decode …".
func worker(ctx context.Context, args []string, w io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("want train or decode")
	}
	kind := args[0]
	fs := pflag.NewFlagSet("worker "+kind, pflag.ContinueOnError)
	shape := fs.String("shape", "tiny", "tiny, 05b, or 7b")
	batch := fs.Int("batch", 8, "sequences")
	seq := fs.Int("seq", 256, "training tokens per sequence")
	steps := fs.Int("steps", 2, "timed training steps")
	ckpt := fs.Bool("checkpoint", false, "gradient checkpointing")
	gateUp := fs.Bool("bf16-gate-up", false, "train: hold the MLP's gate and up as bfloat16 where the backend can (model.TrainOptions.GateUpBF16)")
	prompt := fs.Int("prompt", 16, "decode prompt tokens")
	tokens := fs.Int("tokens", 16, "timed decode steps")
	dt := fs.String("dtype", "f32", "weights in memory: f32 or bf16")
	comp := fs.String("compute", "f32", "precision of the products on the base weights: f32, or bf16 (needs --dtype bf16 and AVX512-BF16)")
	bkern := fs.String("bf16-kernel", "", "--compute bf16 on the cpu: the micro-kernel (cpu.Options.BF16Kernel): \"\" the best the CPU has, amx, avx512bf16 or portable")
	prof := fs.String("cpuprofile", "", "write a CPU profile of the timed part to this file")
	device := fs.String("device", "cpu", "cpu, or cuda (kernels/cuda; the device check runs it)")
	libcuda := fs.String("libcuda", "", "--device cuda: explicit path of libcuda (default: its soname)")
	libcublas := fs.String("libcublas", "", "--device cuda: explicit path of libcublas (default: sonames 13, 12, 11)")
	gemm := fs.String("gemm", cuda.GEMMCublas, "--device cuda --compute bf16: the library of the linear layers' GEMMs, cublas (cublasGemmEx, the default) or cublaslt (cublasLtMatmul with a workspace; loads cuBLASLt); cuda.Ops.SetGEMMLibrary")
	libcublaslt := fs.String("libcublaslt", "", "--gemm cublaslt: explicit path of libcublasLt (default: sonames 13, 12, 11)")
	rank := fs.Int("rank", 8, "LoRA rank of the training step (all projections)")
	profOps := fs.Bool("profile-ops", false, "--device cuda: print the timed steps' time per op (OPS lines; the training attention named with its kernels: tc1, tc2, tc3, tc3k64, gemm or f32; Matmul split by M×N×K and the linear ops by weight OC×C), with the TFLOP/s of the ops with products and an OPS (products) summary of them all (FLOPs counted from the ops' shapes, the attention's the conventional causal count: cuda.Backend.StartProfile; not yet run on a GPU)")
	peak := fs.Float64("peak-tflops", 0, "--profile-ops: the device's dense bf16 tensor-core peak in TFLOP/s (989 for an H200); the OPS (products) summary then says what percent of it the ops with products reached. 0: none")
	cudaSync := fs.String("cuda-sync", "op", "--device cuda: op (every op ends synchronized, the default) or edges (stream-ordered: ops queue their work and the backend waits only where the host reads results or memory is freed; cuda.Backend.SetSyncEachOp(false), not yet run on a GPU)")
	choose := fs.String("choose", "", "decode: where the greedy token is chosen, host (the argmax of the logits copied to the host each step, as before) or device (kernels.RowChooser: the argmax where the logits live; --device cuda). Default: device on a backend that can, else host")
	attnKern := fs.String("attention-kernel", "", "--device cuda --compute bf16: the tensor-core training attention, tc1 (attention_tc.cu, the default), tc2 (attention_fa2.cu), tc3 (attention_mma.cu), tc3k64 (tc3 with 64-row tiles in dynamic shared memory) or gemm (batched cuBLAS GEMMs, ops_attention_gemm.go); cuda.Ops.SetAttentionKernel")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	c, err := shapeConfig(*shape)
	if err != nil {
		return err
	}
	prec, err := kernels.ParsePrecision(*comp)
	if err != nil {
		return fmt.Errorf("--compute: %w", err)
	}
	if err := checkDeviceFlags(*device, *profOps, *attnKern, *gemm, *cudaSync); err != nil {
		return err
	}
	if err := checkPeak(*peak, *profOps); err != nil {
		return err
	}
	if err := checkChoose(*choose, *device, kind); err != nil {
		return err
	}
	workers := cpu.SpareProc(0)
	be, err := newBackend(*device, workers, prec, *bkern, cuda.Options{DriverLib: *libcuda, BLASLib: *libcublas,
		BLASLt: *gemm == cuda.GEMMCublasLt, BLASLtLib: *libcublaslt})
	if err != nil {
		return err
	}
	defer be.Close()
	if err := configureCUDA(be, *attnKern, *gemm, *cudaSync); err != nil {
		return err
	}
	wdt, err := model.ParseWeightDType(*dt)
	if err != nil {
		return fmt.Errorf("--%w", err)
	}
	if prec == kernels.PrecisionBF16 && wdt != model.DTypeBFloat16 {
		return fmt.Errorf("--compute bf16 needs --dtype bf16 (it multiplies bfloat16 weights)")
	}
	// Built in its dtype, as LoadBF16 would load it: no float32 copy of
	// the weights ever exists, so the peak RSS is the dtype's own.
	m, err := model.NewAs(c, be, wdt)
	if err != nil {
		return err
	}
	defer m.Close()
	fill(m)
	rng := rand.New(rand.NewPCG(1, 2))
	// Profile from here: the weights are filled, the measured part follows.
	if *prof != "" {
		f, err := os.Create(*prof)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	var res workerResult
	var ops *opsProfile
	if *profOps {
		ops = &opsProfile{b: be.(*cuda.Backend), peak: *peak}
	}
	switch kind {
	case "train":
		res, err = trainWorker(ctx, m, rng, *batch, *seq, *steps, *rank, model.TrainOptions{Checkpoint: *ckpt, GateUpBF16: *gateUp}, ops)
	case "decode":
		res, err = decodeWorker(ctx, m, rng, workers, *batch, *prompt, *tokens, *device == "cpu", *choose, ops)
	default:
		return fmt.Errorf("unknown worker %q (want train or decode)", kind)
	}
	if err != nil {
		return err
	}
	res.Shape = *shape
	res.Dtype = *dt
	res.Device = *device
	if *device == "cuda" {
		res.CUDASync = *cudaSync
		res.GEMM = *gemm
	}
	ops.print(w)
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "BENCH %s\n", b)
	return nil
}

// configureCUDA sets a cuda.Backend's training attention, GEMM library
// and synchronization from the worker's flags (checked before by
// checkDeviceFlags); other backends take none of them.
func configureCUDA(be kernels.Backend, attnKern, gemm, cudaSync string) error {
	cb, ok := be.(*cuda.Backend)
	if !ok {
		return nil
	}
	if err := cb.SetAttentionKernel(attnKern); err != nil {
		return fmt.Errorf("--attention-kernel: %w", err)
	}
	if err := cb.SetGEMMLibrary(gemm); err != nil {
		return fmt.Errorf("--gemm: %w", err)
	}
	cb.SetSyncEachOp(cudaSync == "op")
	return nil
}

// fill gives the weights cheap deterministic values of a sensible scale
// (the values do not matter for speed; norms get 1), on every core: the 7B
// shape of the device check has 7.6 billion of them. A bfloat16 matrix's
// values are made on the host a block at a time and go into the backend's
// memory by kernels.UploadBF16 (on kernels/cuda a bulk copy, where host
// writes would fault its managed pages over one at a time).
func fill(m *model.Model) {
	const block = 1 << 20
	type job struct {
		t      model.Tensor
		lo, hi int
	}
	be := m.Backend()
	_, upload := be.(kernels.HostUploader)
	jobs := make(chan job)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf [4096]float32
			var host []uint16 // nil: the backend's memory is the host's, written in place
			if upload {
				host = make([]uint16, block)
			}
			for j := range jobs {
				fillRange(be, j.t, j.lo, j.hi, buf[:], host)
			}
		}()
	}
	for _, t := range m.Tensors() {
		n := max(len(t.Values), len(t.Bits))
		for lo := 0; lo < n; lo += block {
			jobs <- job{t, lo, min(n, lo+block)}
		}
	}
	close(jobs)
	wg.Wait()
}

// fillRange fills elements [lo, hi) of t, a bfloat16 matrix's through
// host (at least hi − lo values) and kernels.UploadBF16 onto be, or in
// place where host is nil.
func fillRange(be kernels.Backend, t model.Tensor, lo, hi int, buf []float32, host []uint16) {
	if len(t.Shape) == 1 {
		for i := lo; i < min(hi, len(t.Values)); i++ {
			t.Values[i] = 1
		}
		return
	}
	for i := lo; i < min(hi, len(t.Values)); i++ {
		t.Values[i] = fillValue(i)
	}
	if lo >= len(t.Bits) {
		return
	}
	// The same values, rounded, through a small buffer: a float32 copy
	// would be garbage the peak RSS counts.
	hi = min(hi, len(t.Bits))
	h := t.Bits[lo:hi]
	if host != nil {
		h = host[:hi-lo]
	}
	for l := 0; l < len(h); l += len(buf) {
		f := buf[:min(len(buf), len(h)-l)]
		for i := range f {
			f[i] = fillValue(lo + l + i)
		}
		kernels.ToBF16(h[l:l+len(f)], f)
	}
	if host != nil {
		kernels.UploadBF16(be, t.Bits[lo:hi], h)
	}
}

func fillValue(i int) float32 { return float32((i*7919)%2001-1000) * 3e-5 }

// newBackend is the worker's one backend: kernels/cpu on workers threads
// (bf16Kernel its Options.BF16Kernel), or kernels/cuda on the first device.
func newBackend(device string, workers int, prec kernels.Precision, bf16Kernel string, o cuda.Options) (kernels.Backend, error) {
	switch device {
	case "cpu":
		return cpu.New(cpu.Options{Workers: workers, Compute: prec, BF16Kernel: bf16Kernel})
	case "cuda":
		if bf16Kernel != "" {
			return nil, fmt.Errorf("--bf16-kernel %s: the flag picks a CPU micro-kernel; --device cuda takes none", bf16Kernel)
		}
		return cuda.OpenBackend(o, prec)
	}
	return nil, fmt.Errorf("--device %q: want cpu or cuda", device)
}

// deviceBytes is what a CUDA backend has allocated (0 on the CPU).
func deviceBytes(be kernels.Backend) int64 {
	if b, ok := be.(*cuda.Backend); ok {
		_, n := b.Device().Live()
		return int64(n)
	}
	return 0
}

func trainWorker(ctx context.Context, m *model.Model, rng *rand.Rand, B, T, steps, rank int, topt model.TrainOptions, ops *opsProfile) (workerResult, error) {
	V := m.Config.Vocab
	b := &model.Batch{SeqOff: []int32{0}}
	for range B {
		for i := range T {
			b.IDs = append(b.IDs, int32(rng.IntN(V)))
			b.Targets = append(b.Targets, int32(rng.IntN(V)))
			b.Pos = append(b.Pos, int32(i))
		}
		b.SeqOff = append(b.SeqOff, int32(len(b.IDs)))
	}
	ad, err := model.NewAdapter(&m.Config, model.AdapterConfig{Rank: rank, Alpha: float64(2 * rank), Targets: model.AllModules()}, 1)
	if err != nil {
		return workerResult{}, err
	}
	if err := ad.Place(m.Backend()); err != nil {
		return workerResult{}, err
	}
	defer ad.Free()
	N := len(b.IDs)
	dlp := make([]float32, N)
	for i := range dlp {
		dlp[i] = -1 / float32(N) // loss = −mean logprob, as reference.py
	}
	// The moments live where the adapter does (the backend's memory): on
	// a backend that allocates, one allocation each for all the tensors,
	// which the adapter's Flat memory matches, so one AdamW updates them
	// all (as the trainer's optimizer does).
	be := m.Backend()
	type moments struct{ m, v []float32 }
	var opt []moments
	defer func() {
		for _, mo := range opt {
			kernels.FreeF32(be, mo.m)
			kernels.FreeF32(be, mo.v)
		}
	}()
	flatP, flatG := ad.Flat()
	alloc := func(n int) {
		if err != nil {
			return
		}
		var mo moments
		if mo.m, err = kernels.AllocF32(be, n); err == nil {
			mo.v, err = kernels.AllocF32(be, n)
		}
		opt = append(opt, mo) // freed by the defer, whichever succeeded
	}
	if flatP != nil {
		alloc(len(flatP))
	} else {
		ad.Params(func(_ string, param, _ []float32) { alloc(len(param)) })
	}
	if err != nil {
		return workerResult{}, fmt.Errorf("optimizer state: %w", err)
	}
	var first, timed time.Duration
	var devBytes int64
	var lpMean, gradNorm float64
	var norms, probes [3]float64 // q, k, v
	for step := 0; step <= steps; step++ {
		t0 := time.Now()
		ad.ZeroGrad()
		p, err := m.Forward(ctx, b, ad, topt)
		if err != nil {
			return workerResult{}, err
		}
		if step == 0 {
			lpMean = mean(p.Logprob) // Forward ended synchronized: the host reads it in place
		}
		if err := p.Backward(ctx, dlp, nil); err != nil {
			return workerResult{}, err
		}
		if step == 0 {
			devBytes = deviceBytes(be)
			gradNorm = adapterGradNorm(be, ad, flatG)
			for i, mod := range []model.Module{model.ModQ, model.ModK, model.ModV} {
				norms[i], probes[i] = projectionGradProbe(be, ad, mod)
			}
		}
		p.Release() // the next step reuses the activation memory
		if flatP != nil {
			be.AdamW(flatP, flatG, opt[0].m, opt[0].v, len(flatP), step+1, kernels.DefaultAdamW(1e-4))
		} else {
			i := 0
			ad.Params(func(_ string, param, grad []float32) {
				be.AdamW(param, grad, opt[i].m, opt[i].v, len(param), step+1, kernels.DefaultAdamW(1e-4))
				i++
			})
		}
		kernels.Synchronize(be) // the step's time includes its queued updates (--cuda-sync edges)
		if d := time.Since(t0); step == 0 {
			first = d
			ops.start()
		} else {
			timed += d
		}
	}
	ops.stop(timed)
	for _, v := range append([]float64{lpMean, gradNorm}, append(norms[:], probes[:]...)...) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return workerResult{}, fmt.Errorf("first step: mean logprob %v, gradient norm %v (q, k, v: %v, probes %v): not finite", lpMean, gradNorm, norms, probes)
		}
	}
	return workerResult{Kind: "train", Batch: B, TokensPerS: float64(N*steps) / timed.Seconds(),
		FirstS: first.Seconds(), Checkpoint: topt.Checkpoint, BF16GateUp: topt.GateUpBF16, Rank: rank, DeviceBytes: devBytes,
		FirstLogprob: lpMean, FirstGradNorm: gradNorm,
		FirstQGradNorm: norms[0], FirstQGradProbe: probes[0], FirstKGradNorm: norms[1], FirstKGradProbe: probes[1],
		FirstVGradNorm: norms[2], FirstVGradProbe: probes[2]}, nil
}

// mean returns the mean of x, summed in float64.
func mean(x []float32) float64 {
	var s float64
	for _, v := range x {
		s += float64(v)
	}
	return s / float64(max(len(x), 1))
}

// adapterGradNorm returns the L2 norm of ad's gradient, its sums of
// squares taken on be (one over flatG, the gradient's one allocation, when
// the adapter has it; else one a tensor).
func adapterGradNorm(be kernels.Backend, ad *model.Adapter, flatG []float32) float64 {
	if flatG != nil {
		return math.Sqrt(be.SumSquares(flatG, len(flatG)))
	}
	var s float64
	ad.Params(func(_ string, _, grad []float32) { s += be.SumSquares(grad, len(grad)) })
	return math.Sqrt(s)
}

// projectionGradProbe returns the L2 norm of the gradient of ad's updates
// of projection mod (A, then B, in every layer, in that order) and its sum
// with the signs of probeSign, both over float64 sums of the values copied
// to the host.
func projectionGradProbe(be kernels.Backend, ad *model.Adapter, mod model.Module) (norm, probe float64) {
	var host []float32
	i := uint64(0)
	for _, layer := range ad.Layers {
		lr := layer[mod]
		if lr == nil {
			continue
		}
		for _, g := range [][]float32{lr.DA, lr.DB} {
			host = slices.Grow(host[:0], len(g))[:len(g)]
			kernels.CopyToHost(be, host, g, len(g))
			for _, v := range host {
				norm += float64(v) * float64(v)
				probe += probeSign(i) * float64(v)
				i++
			}
		}
	}
	return math.Sqrt(norm), probe
}

// probeSign is +1 or −1 for index i, by the top bit of a SplitMix64 hash
// of i: fixed, and uncorrelated with any structure of the gradients.
func probeSign(i uint64) float64 {
	z := i + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	if (z^z>>31)>>63 == 1 {
		return -1
	}
	return 1
}

// decodeWorker times tokens greedy decode steps of B sequences after a
// prompt, then as many more steps each after a plain read of the weights
// (pairedRounds) on the backend's workers when pairRead (on the CPU: on a
// device the weights are not the host's to read). choose says where the
// tokens are chosen: "host" (the argmax of the logits StepInto copied to
// the host), "device" (kernels.RowChooser on StepDevice's logits), or ""
// (device when the backend is a RowChooser); BENCH's choose says which.
func decodeWorker(ctx context.Context, m *model.Model, rng *rand.Rand, workers, B, prompt, tokens int, pairRead bool, choose string, ops *opsProfile) (workerResult, error) {
	chooser, ok := m.Backend().(kernels.RowChooser)
	switch {
	case choose == "" && ok:
		choose = "device"
	case choose == "":
		choose = "host"
	case choose == "device" && !ok:
		return workerResult{}, fmt.Errorf("--choose device: %s chooses no tokens (not a kernels.RowChooser)", m.Backend().Name())
	}
	if choose == "device" {
		return decodeDevice(ctx, m, chooser, rng, B, prompt, tokens, ops)
	}
	V := m.Config.Vocab
	cache := model.NewContiguousCache(&m.Config, m.Backend())
	defer cache.Close()
	in := randomPrompts(rng, B, prompt, V)
	t0 := time.Now()
	logits, err := m.Step(ctx, cache, in, nil)
	if err != nil {
		return workerResult{}, err
	}
	defer func() { m.FreeLogits(logits) }()
	first := time.Since(t0)
	step := func() error {
		for s := range in {
			in[s].IDs = []int32{argmax(logits[s*V : (s+1)*V])}
		}
		// A failed step returns no logits and leaves the previous ones
		// allocated: they stay in logits, for the deferred free.
		next, err := m.StepInto(ctx, cache, in, nil, logits)
		if err != nil {
			return err
		}
		logits = next
		return nil
	}
	elapsed, err := timeSteps(m.Backend(), ops, tokens, step)
	if err != nil {
		return workerResult{}, err
	}
	res := workerResult{Kind: "decode", Batch: B, TokensPerS: float64(B*tokens) / elapsed.Seconds(),
		FirstS: first.Seconds(), DeviceBytes: deviceBytes(m.Backend()), Choose: choose}
	if !pairRead {
		return res, nil
	}
	ms, err := pairedRounds(weightBytes(m), workers, B, tokens, step)
	if err != nil {
		return workerResult{}, err
	}
	res.ReadTokensPerS, res.StepOverRead = ms.ReadTokensPerS, ms.StepOverRead
	return res, nil
}

// decodeDevice is decodeWorker choosing each step's tokens by chooser's
// ChooseRows (greedy: the argmax, the host's token) on StepDevice's logits,
// which never cross to the host: the same steps, without the host's read
// of [B, V] logits that issue #28 measured at 44% of a decode step on an
// H200. No paired read: it runs on a device.
func decodeDevice(ctx context.Context, m *model.Model, chooser kernels.RowChooser, rng *rand.Rand, B, prompt, tokens int, ops *opsProfile) (workerResult, error) {
	V := m.Config.Vocab
	cache := model.NewContiguousCache(&m.Config, m.Backend())
	defer cache.Close()
	in := randomPrompts(rng, B, prompt, V)
	rows := make([]int32, B)
	for s := range rows {
		rows[s] = int32(s)
	}
	inv, u := make([]float32, B), make([]float64, B) // 0: greedy, no draw
	picks := make([]kernels.RowChoice, B)
	t0 := time.Now()
	logits, err := m.StepDevice(ctx, cache, in, nil, nil)
	if err != nil {
		return workerResult{}, err
	}
	defer func() { m.FreeDeviceLogits(logits) }()
	first := time.Since(t0)
	step := func() error {
		chooser.ChooseRows(picks, logits, V, rows, inv, u)
		for s := range in {
			in[s].IDs = []int32{picks[s].ID}
		}
		// A failed step returns no logits and leaves the previous ones
		// allocated: they stay in logits, for the deferred free.
		next, err := m.StepDevice(ctx, cache, in, nil, logits)
		if err != nil {
			return err
		}
		logits = next
		return nil
	}
	elapsed, err := timeSteps(m.Backend(), ops, tokens, step)
	if err != nil {
		return workerResult{}, err
	}
	return workerResult{Kind: "decode", Batch: B, TokensPerS: float64(B*tokens) / elapsed.Seconds(),
		FirstS: first.Seconds(), DeviceBytes: deviceBytes(m.Backend()), Choose: "device"}, nil
}

// randomPrompts is B decode sequences of prompt random token ids below V.
func randomPrompts(rng *rand.Rand, B, prompt, V int) []model.StepInput {
	in := make([]model.StepInput, B)
	for s := range in {
		ids := make([]int32, prompt)
		for i := range ids {
			ids[i] = int32(rng.IntN(V))
		}
		in[s] = model.StepInput{Seq: s, IDs: ids}
	}
	return in
}

// timeSteps runs step tokens times under ops' profile and returns their
// wall time, the last step's queued work included (be's
// kernels.Synchronize: --cuda-sync edges).
func timeSteps(be kernels.Backend, ops *opsProfile, tokens int, step func() error) (time.Duration, error) {
	ops.start()
	t0 := time.Now()
	for range tokens {
		if err := step(); err != nil {
			return 0, err
		}
	}
	kernels.Synchronize(be)
	elapsed := time.Since(t0)
	ops.stop(elapsed)
	return elapsed, nil
}

// checkChoose refuses a --choose value that is none, or given to a worker
// that does not decode.
func checkChoose(choose, device, kind string) error {
	switch {
	case choose != "" && choose != "host" && choose != "device":
		return fmt.Errorf("--choose %q: want host or device", choose)
	case choose != "" && kind != "decode":
		return fmt.Errorf("--choose is decode's")
	case choose == "device" && device != "cuda":
		return fmt.Errorf("--choose device needs --device cuda")
	}
	return nil
}

func argmax(x []float32) int32 {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return int32(best)
}

// opsProfile is --profile-ops: cuda.Backend's time per op over the timed
// steps, printed as OPS lines beside the BENCH line, with what the ops
// leave unaccounted (host work between ops: the host's argmax under
// --choose host, AdamW's loop, the model's bookkeeping). A nil *opsProfile does nothing.
type opsProfile struct {
	b     *cuda.Backend
	ops   []cuda.OpTime
	timed time.Duration
	// peak is --peak-tflops: the device's bf16 tensor-core peak in TFLOP/s
	// (0: unknown), which the products' summary lines are set against.
	peak float64
}

func (p *opsProfile) start() {
	if p != nil {
		p.b.StartProfile()
	}
}

func (p *opsProfile) stop(timed time.Duration) {
	if p != nil {
		p.ops, p.timed = p.b.StopProfile(), timed
	}
}

// print writes an OPS line per op, the costliest first, with its TFLOP/s
// when it has products (cuda.OpTime.Flops); then the summaries of the ops
// with products: "(products)" all of them, "(products w/o attention)"
// without the training attention, whose FLOPs are the conventional causal
// count rather than what its kernels execute; each with its TFLOP, its
// TFLOP/s and, with a peak (--peak-tflops), their percent of it; then the
// time outside the ops and the timed total.
func (p *opsProfile) print(w io.Writer) {
	if p == nil {
		return
	}
	var sum time.Duration
	var all, noAttn opTimeSum
	for _, o := range p.ops {
		sum += o.Total
		fmt.Fprintf(w, "OPS %-42s %7d calls %10.1f ms %6.1f%% %9.1f us/call", o.Op, o.Calls,
			o.Total.Seconds()*1e3, 100*o.Total.Seconds()/p.timed.Seconds(), o.Total.Seconds()*1e6/float64(o.Calls))
		if o.Flops > 0 {
			fmt.Fprintf(w, " %8.1f TFLOP/s", tflops(o.Flops, o.Total))
			all.add(o)
			if !strings.HasPrefix(o.Op, "Attention") {
				noAttn.add(o)
			}
		}
		fmt.Fprintln(w)
	}
	p.printProducts(w, "(products)", all)
	p.printProducts(w, "(products w/o attention)", noAttn)
	fmt.Fprintf(w, "OPS %-42s %7s       %10.1f ms %6.1f%%\n", "(outside ops)", "", (p.timed-sum).Seconds()*1e3,
		100*(p.timed-sum).Seconds()/p.timed.Seconds())
	fmt.Fprintf(w, "OPS %-42s %7s       %10.1f ms\n", "(timed total)", "", p.timed.Seconds()*1e3)
}

// opTimeSum adds up the profile lines of ops with products.
type opTimeSum struct {
	Calls int
	Total time.Duration
	Flops int64
}

func (s *opTimeSum) add(o cuda.OpTime) {
	s.Calls += o.Calls
	s.Total += o.Total
	s.Flops += o.Flops
}

// printProducts writes a summary line of ops with products (none: no line).
func (p *opsProfile) printProducts(w io.Writer, name string, s opTimeSum) {
	if s.Flops == 0 {
		return
	}
	r := tflops(s.Flops, s.Total)
	fmt.Fprintf(w, "OPS %-42s %7d calls %10.1f ms %6.1f%% %9.3f TFLOP %8.1f TFLOP/s", name, s.Calls, s.Total.Seconds()*1e3,
		100*s.Total.Seconds()/p.timed.Seconds(), float64(s.Flops)/1e12, r)
	if p.peak > 0 {
		fmt.Fprintf(w, " %5.1f%% of the %g TFLOP/s peak", 100*r/p.peak, p.peak)
	}
	fmt.Fprintln(w)
}

// tflops is flops over d in TFLOP/s (0 for no time).
func tflops(flops int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(flops) / d.Seconds() / 1e12
}

// checkPeak refuses a --peak-tflops that is negative or not a number, or
// given without --profile-ops (whose summary it is for).
func checkPeak(peak float64, profOps bool) error {
	switch {
	case !(peak >= 0) || math.IsInf(peak, 0):
		return fmt.Errorf("--peak-tflops %g: want a device's peak in TFLOP/s, > 0 (or 0: none)", peak)
	case peak > 0 && !profOps:
		return fmt.Errorf("--peak-tflops needs --profile-ops (it sets the OPS summary against the peak)")
	}
	return nil
}

// checkDeviceFlags refuses the worker's --device cuda options on another
// device, and --cuda-sync values that are none or time nothing.
func checkDeviceFlags(device string, profOps bool, attnKern, gemm, cudaSync string) error {
	if profOps && device != "cuda" {
		return fmt.Errorf("--profile-ops needs --device cuda")
	}
	if attnKern != "" && device != "cuda" {
		return fmt.Errorf("--attention-kernel %s needs --device cuda", attnKern)
	}
	if gemm != cuda.GEMMCublas && device != "cuda" {
		return fmt.Errorf("--gemm %s needs --device cuda", gemm)
	}
	switch {
	case cudaSync != "op" && cudaSync != "edges":
		return fmt.Errorf("--cuda-sync %q: want op or edges", cudaSync)
	case cudaSync == "edges" && device != "cuda":
		return fmt.Errorf("--cuda-sync edges needs --device cuda")
	case cudaSync == "edges" && profOps:
		return fmt.Errorf("--cuda-sync edges with --profile-ops would time nothing stream-ordered: a profile synchronizes every op")
	}
	return nil
}

package model

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/ref"
)

// The model on cuda.Backend in its stream-ordered mode
// (SetSyncEachOp(false): ops queue their work and return) over the
// emulated device in its deferred mode (kernels/cuda/cudafake: launches
// and GEMMs run only at the points where CUDA has the host wait). A host
// read of the backend's memory that no synchronization came before sees
// the values from before the queued ops, so these tests fail where the
// model misses a kernels.Synchronize (TestStreamOrderedNeedsSync shows one
// that does).

// streamCUDABackend is emulatedCUDABackend stream-ordered on a deferred
// emulated device.
func streamCUDABackend(t *testing.T) *cuda.Backend {
	t.Helper()
	b, drv := emulatedCUDABackendDriver(t, kernels.PrecisionF32)
	if err := drv.SetDeferred(true); err != nil {
		t.Fatal(err)
	}
	b.SetSyncEachOp(false)
	return b
}

// TestGoldenCUDAStreamOrdered runs the qwen2 golden (logits, logprobs,
// entropy and every LoRA gradient, with and without checkpointing)
// through the stream-ordered backend on the deferred emulated device.
func TestGoldenCUDAStreamOrdered(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model's kernels on the CPU emulation of the CUDA device")
	}
	checkCUDAGolden(t, streamCUDABackend(t), "qwen2")
}

// TestStepCUDAStreamOrdered is TestStepCUDAEmulated (decode through the KV
// cache, three sequences a step, Gemma 3's sliding layer) on the
// stream-ordered backend over the deferred emulated device: each step's
// logits come to the host by CopyToHost, after the queued ops.
func TestStepCUDAStreamOrdered(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model's kernels on the CPU emulation of the CUDA device")
	}
	b := streamCUDABackend(t)
	start := time.Now()
	checkStepMatchesFull(t, b, "gemma3_text", "f32")
	t.Logf("on %s, stream-ordered: %v", b.Name(), time.Since(start).Round(time.Millisecond))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// noSync is the stream-ordered backend with its Synchronize dropped: what
// the model would see had it not synchronized where the host reads.
type noSync struct{ *cuda.Backend }

func (noSync) Synchronize() {}

// TestStreamOrderedNeedsSync: Forward's logprobs and Backward's gradients,
// read on the host, match kernels/ref's on the stream-ordered backend, and
// do not when the backend's Synchronize is dropped (noSync): the deferred
// emulated device makes the missing synchronization fail the test.
func TestStreamOrderedNeedsSync(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model's kernels on the CPU emulation of the CUDA device")
	}
	ctx := context.Background()
	b := streamCUDABackend(t)
	defer b.Close()
	run := func(be kernels.Backend) (lp, grad []float32) {
		m := newMicro(t, "qwen2", be, 5)
		defer m.Close()
		ad := randomAdapter(t, m, []Module{ModQ, ModDown}, 2, 6)
		defer ad.Free()
		batch := packed(m.Config.Vocab, []int{4, 3}, 8)
		p, err := m.Forward(ctx, batch, ad, TrainOptions{Chunk: 64})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Release()
		lp = append([]float32(nil), p.Logprob...)
		dlp := make([]float32, len(lp))
		for i := range dlp {
			dlp[i] = 1
		}
		if err := p.Backward(ctx, dlp, nil); err != nil {
			t.Fatal(err)
		}
		ad.Params(func(_ string, _, g []float32) { grad = append(grad, g...) })
		return lp, grad
	}
	wantLP, wantGrad := run(ref.New())
	lp, grad := run(b)
	if d := maxRelDiff(lp, wantLP); !(d <= 1e-4) {
		t.Errorf("logprobs on the stream-ordered backend differ from ref's by %.3g", d)
	}
	if d := maxRelDiff(grad, wantGrad); !(d <= 1e-3) {
		t.Errorf("LoRA gradients on the stream-ordered backend differ from ref's by %.3g", d)
	}
	lp, grad = run(noSync{b})
	if d := maxRelDiff(lp, wantLP); d <= 1e-2 {
		t.Errorf("logprobs without Synchronize differ from ref's by only %.3g: the deferred device ran the queued ops before the host read", d)
	}
	if d := maxRelDiff(grad, wantGrad); d <= 1e-2 {
		t.Errorf("LoRA gradients without Synchronize differ from ref's by only %.3g", d)
	}
}

// TestGoldenCUDAOnHardwareStreamOrdered is TestGoldenCUDAOnHardware with
// the backend stream-ordered (SetSyncEachOp(false)): every family's golden
// on device 0 through the real driver and cuBLAS, the ops queued and the
// host waiting only where it reads. It runs only when HONE_CUDA_TEST=1
// (run.sh's model-golden step matches it), from a folder where goldenDir
// holds the golden files.
func TestGoldenCUDAOnHardwareStreamOrdered(t *testing.T) {
	if os.Getenv("HONE_CUDA_TEST") != "1" {
		t.Skip("set HONE_CUDA_TEST=1 on a machine with a CUDA device")
	}
	for _, name := range goldenCases {
		t.Run(name, func(t *testing.T) {
			b, err := cuda.OpenBackend(cuda.Options{DriverLib: os.Getenv("HONE_LIBCUDA"), BLASLib: os.Getenv("HONE_LIBCUBLAS")}, kernels.PrecisionF32)
			if err != nil {
				t.Fatal(err)
			}
			b.SetSyncEachOp(false)
			checkCUDAGolden(t, b, name)
		})
	}
}

// TestStreamOrderedWaits counts, on the micro qwen2 model over the
// emulated device, the points where the host waits for the device
// (cuCtxSynchronize, and the copies that wait for the stream: cuMemcpyHtoD
// from Go memory, cuMemcpyDtoH) in a LoRA training pass (Forward and
// Backward) and a decode step of two sequences, with every op
// synchronized and stream-ordered. Stream-ordered, the waits of a
// training pass are those of its host edges (the ids, positions,
// sequence offsets and targets once each, as the edge buffers hold them
// for every layer, and Forward's and Backward's Synchronize), a few, not
// one an op; a decode step's also count the decode attention's cache
// table (new in every layer), the copy of the logits, and the frees of
// the test's ContiguousCache when it grows.
func TestStreamOrderedWaits(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model's kernels on the CPU emulation of the CUDA device")
	}
	ctx := context.Background()
	waits := func(stream bool) (launches, trainWaits, decodeLaunches, decodeWaits int) {
		b, drv := emulatedCUDABackendDriver(t, kernels.PrecisionF32)
		defer b.Close()
		if stream {
			if err := drv.SetDeferred(true); err != nil {
				t.Fatal(err)
			}
			b.SetSyncEachOp(false)
		}
		count := func() int {
			return drv.Calls("cuCtxSynchronize") + drv.Calls("cuMemcpyHtoD_v2") + drv.Calls("cuMemcpyDtoH_v2")
		}
		m := newMicro(t, "qwen2", b, 5)
		defer m.Close()
		ad := randomAdapter(t, m, AllModules(), 2, 6)
		defer ad.Free()
		batch := packed(m.Config.Vocab, []int{4, 3}, 8)
		dlp := make([]float32, len(batch.IDs))
		for i := range dlp {
			dlp[i] = 1
		}
		pass := func() {
			p, err := m.Forward(ctx, batch, ad, TrainOptions{Chunk: 64})
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Backward(ctx, dlp, nil); err != nil {
				t.Fatal(err)
			}
			p.Release()
		}
		pass() // the first pass allocates (the slab, the scratch)
		l0, w0 := len(drv.Launches()), count()
		pass()
		launches, trainWaits = len(drv.Launches())-l0, count()-w0
		cache := NewContiguousCache(&m.Config, b)
		defer cache.Close()
		in := []StepInput{{Seq: 1, IDs: []int32{5, 9, 2}}, {Seq: 2, IDs: []int32{7}}}
		logits, err := m.StepInto(ctx, cache, in, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		in = []StepInput{{Seq: 1, IDs: []int32{3}}, {Seq: 2, IDs: []int32{4}}}
		if logits, err = m.StepInto(ctx, cache, in, nil, logits); err != nil {
			t.Fatal(err)
		}
		in = []StepInput{{Seq: 1, IDs: []int32{8}}, {Seq: 2, IDs: []int32{1}}}
		l0, w0 = len(drv.Launches()), count()
		if logits, err = m.StepInto(ctx, cache, in, nil, logits); err != nil {
			t.Fatal(err)
		}
		decodeLaunches, decodeWaits = len(drv.Launches())-l0, count()-w0
		m.FreeLogits(logits)
		return launches, trainWaits, decodeLaunches, decodeWaits
	}
	l, w, dl, dw := waits(false)
	sl, sw, sdl, sdw := waits(true)
	t.Logf("training pass: %d launches, %d waits each op synchronized, %d stream-ordered", l, w, sw)
	t.Logf("decode step: %d launches, %d waits each op synchronized, %d stream-ordered", dl, dw, sdw)
	if sl != l || sdl != dl {
		t.Errorf("stream-ordered launched %d and %d kernels, each op synchronized %d and %d", sl, sdl, l, dl)
	}
	if sw > 8 {
		t.Errorf("a stream-ordered training pass waited %d times, want at most 8 (its host edges)", sw)
	}
	if 4*sdw > dw {
		t.Errorf("a stream-ordered decode step waited %d times, each op synchronized %d: want under a quarter", sdw, dw)
	}
}

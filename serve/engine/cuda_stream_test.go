package engine

import (
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/cudafake"
	"github.com/hone-rl/hone/kernels/ref"
)

// streamOrderedCUDA is cuda.Backend in its stream-ordered mode over the
// emulated device of kernels/cuda/cudafake in its deferred mode, with
// its device; the test is skipped under -short, or without a C++
// compiler outside CI.
func streamOrderedCUDA(t *testing.T) (*cuda.Backend, *cuda.Device) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the model's kernels on the CPU emulation of the CUDA device")
	}
	cxx := os.Getenv("CXX")
	if cxx == "" {
		cxx = "g++"
	}
	lib := filepath.Join(t.TempDir(), "libhone_cuda_emu.so")
	err := cudafake.BuildEmulator(context.Background(), cxx, "../../kernels/cuda", lib)
	if errors.Is(err, exec.ErrNotFound) && os.Getenv("CI") == "" {
		t.Skipf("no C++ compiler for the CUDA emulator: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	emu, err := cudafake.LoadEmulator(lib)
	if err != nil {
		t.Fatal(err)
	}
	drv := cudafake.NewEmulatedDriver(1, 0, emu)
	dev, err := cuda.OpenWith(drv, cudafake.NewBLAS(drv), 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cuda.NewBackend(dev, kernels.PrecisionF32)
	if err != nil {
		dev.Close()
		t.Fatal(err)
	}
	if err := drv.SetDeferred(true); err != nil {
		t.Fatal(err)
	}
	b.SetSyncEachOp(false)
	return b, dev
}

// TestDecodeCUDAStreamOrdered: TestDecodeResident's requests (continuous
// batching, a chunked prefill, n = 3, prefix caching across turns, an
// adapter) on cuda.Backend in its stream-ordered mode
// (SetSyncEachOp(false): the ops queue their work) over the emulated
// device of kernels/cuda/cudafake in its deferred mode (the queued
// launches and GEMMs run only where CUDA has the host wait), so that a
// host read of the backend's memory without a synchronization before it
// sees stale values. The tokens are the reference backend's, the logprobs
// within float32 rounding of them, and the backend holds nothing but its
// scratch at the end.
func TestDecodeCUDAStreamOrdered(t *testing.T) {
	b, dev := streamOrderedCUDA(t)

	want := decodeTurns(t, ref.New())
	got := decodeTurns(t, b)
	if len(got) != len(want) {
		t.Fatalf("%d requests' results on CUDA, %d on ref", len(got), len(want))
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("request %d: %d choices on CUDA, %d on ref", i, len(got[i]), len(want[i]))
		}
		for j, w := range want[i] {
			g := got[i][j]
			if !slices.Equal(g.ids, w.ids) || g.finish != w.finish {
				t.Errorf("request %d choice %d: tokens %v (%s) on the stream-ordered backend, %v (%s) on ref", i, j, g.ids, g.finish, w.ids, w.finish)
				continue
			}
			for k := range w.lps {
				if d := math.Abs(float64(g.lps[k] - w.lps[k])); !(d <= 1e-4*math.Max(1, math.Abs(float64(w.lps[k])))) {
					t.Errorf("request %d choice %d token %d: logprob %v on the stream-ordered backend, %v on ref", i, j, k, g.lps[k], w.lps[k])
				}
			}
		}
	}
	sn, sbytes := b.Scratch()
	if n, bytes := dev.Live(); n != sn || bytes != sbytes {
		t.Errorf("%d device buffers (%d bytes) live after the engine's Shutdown, want the backend's %d scratch buffers (%d bytes) only", n, bytes, sn, sbytes)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestDecodeCUDADeviceChoice: choiceRequests on cuda.Backend (a
// kernels.RowChooser: sample.cu) in the stream-ordered mode over the
// deferred emulated device, so that a choice that did not wait for the
// step's queued logits would read stale values: the backend chooses
// exactly the tokens of the requests it covers (greedy, temperature
// sampling, forked siblings), the host's sampler the rest from its copies
// of their rows, and the tokens, finish reasons and texts are the host
// sampler's on the reference backend, the logprobs within float32
// rounding of them (a draw could differ where its uniform falls within
// rounding of a token's interval end; these do not). The backend holds
// nothing but its scratch at the end.
func TestDecodeCUDADeviceChoice(t *testing.T) {
	b, dev := streamOrderedCUDA(t)
	want, _, _ := chooseTurns(t, ref.New())
	got, st, devTokens := chooseTurns(t, b)
	sameResults(t, got, want, 1e-4)
	if st.DevicePicks != int64(devTokens) || st.GenTokens == st.DevicePicks {
		t.Errorf("%d of %d tokens chosen on the device, want the %d of the requests it covers", st.DevicePicks, st.GenTokens, devTokens)
	}
	sn, sbytes := b.Scratch()
	if n, bytes := dev.Live(); n != sn || bytes != sbytes {
		t.Errorf("%d device buffers (%d bytes) live after the engine's Shutdown, want the backend's %d scratch buffers (%d bytes) only", n, bytes, sn, sbytes)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

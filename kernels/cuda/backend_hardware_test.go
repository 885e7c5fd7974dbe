package cuda_test

import (
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/kerneltest"
)

// TestBackendOnHardware runs kerneltest's whole suite on cuda.Backend on a
// real device (HONE_CUDA_TEST=1, see hardware_test.go): the ops with
// kernels JIT-compiled from the embedded PTX, the GEMMs on cuBLAS, the
// others on the host over managed memory; then checks that Close leaves no
// buffer. With -test.short (under compute-sanitizer) it runs a few groups.
// It has not been run yet.
func TestBackendOnHardware(t *testing.T) {
	dev := openHardware(t)
	b, err := cuda.NewBackend(dev, kernels.PrecisionF32)
	if err != nil {
		dev.Close()
		t.Fatal(err)
	}
	t.Logf("backend: %s", b.Name())
	if testing.Short() {
		kerneltest.RunOps(t, staged{b}, "Matmul", "RMSNorm", "Embedding", "Logprob", "Elementwise")
	} else {
		kerneltest.Run(t, staged{b})
	}
	if n, _ := dev.Live(); n > 1 {
		t.Errorf("%d buffers live after the suite, want at most the int32 scratch", n)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

package cuda_test

import (
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/kerneltest"
)

// TestBackendOnHardware runs kerneltest's whole suite on cuda.Backend on a
// real device (HONE_CUDA_TEST=1, see hardware_test.go): the kernels
// JIT-compiled from the embedded PTX and the GEMMs on cuBLAS, over managed
// memory; then checks that Close leaves no buffer. With -test.short (under
// compute-sanitizer, whose step has 90 s for every hardware test) it runs
// three small groups. It has not been run yet.
func TestBackendOnHardware(t *testing.T) {
	dev := openHardware(t)
	b, err := cuda.NewBackend(dev, kernels.PrecisionF32)
	if err != nil {
		dev.Close()
		t.Fatal(err)
	}
	t.Logf("backend: %s", b.Name())
	if testing.Short() {
		kerneltest.RunOps(t, b, "RMSNorm", "Embedding", "AttentionDecode")
	} else {
		kerneltest.Run(t, b)
	}
	if n, _ := dev.Live(); n != sumScratch(b) {
		t.Errorf("%d buffers live after the suite, want only the backend's %d scratch buffers (the int32 edges, Ops' slots)", n, sumScratch(b))
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// sumScratch is the number of scratch buffers b holds between calls.
func sumScratch(b *cuda.Backend) int {
	n, _ := b.Scratch()
	return n
}

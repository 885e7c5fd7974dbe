package kerneltest_test

import (
	"testing"

	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
)

// TestRef runs the suite on the reference itself: it checks the harness
// (shapes, aliasing, properties) and that ref's BF16 and fused paths agree
// with its own float32 and unfused ones.
func TestRef(t *testing.T) { kerneltest.Run(t, ref.New()) }

func TestRefGolden(t *testing.T) { kerneltest.RunGolden(t, ref.New(), "../../testdata/golden/kernels") }

// TestResident runs the suite through the checking backend: every buffer
// the suite hands an op is the backend's, every op forwards its arguments
// to the wrapped backend unchanged, and the suite frees all it allocated.
func TestResident(t *testing.T) {
	r := kerneltest.Resident(ref.New())
	kerneltest.Run(t, r)
	kerneltest.RunGolden(t, r, "../../testdata/golden/kernels")
	if n := r.Live(); n != 0 {
		t.Errorf("%d allocations live after the suite, want 0", n)
	}
}

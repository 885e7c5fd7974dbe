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

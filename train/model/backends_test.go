package model

import (
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
)

// testBackends lists the backends every model test runs on: the plain-loop
// reference and the CPU backend (OpenBLAS when built with cgo, else gonum),
// the latter with its parallel paths forced on even for tiny shapes, and
// the CPU backend again behind kerneltest.Resident, which panics when an op
// is given memory the backend did not allocate (a device backend's rule).
func testBackends(t testing.TB) []kernels.Backend {
	c, err := cpu.New(cpu.Options{MinParallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return []kernels.Backend{ref.New(), c, kerneltest.Resident(c)}
}

// kernelBackends are testBackends without the checking one, for tests that
// call ops directly on buffers of their own.
func kernelBackends(t testing.TB) []kernels.Backend { return testBackends(t)[:2] }

package model

import (
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/ref"
)

// testBackends lists the backends every model test runs on.
func testBackends(t testing.TB) []kernels.Backend {
	return []kernels.Backend{ref.New()}
}

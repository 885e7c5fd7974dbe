// Package stopat gives tests a backend that cancels a training run's
// context from inside an optimizer update: a SIGTERM that lands while the
// weights change, at a point a test chooses.
package stopat

import (
	"context"

	"github.com/hone-rl/hone/kernels"
)

// Update is a backend that calls Cancel at each AdamW update while *Armed
// is set, before the update runs (the update itself completes).
type Update struct {
	kernels.Backend
	Armed  *bool
	Cancel context.CancelFunc
}

func (b Update) AdamW(param, grad, m, v []float32, n, step int, h kernels.AdamWParams) {
	if *b.Armed {
		b.Cancel()
	}
	b.Backend.AdamW(param, grad, m, v, n, step, h)
}

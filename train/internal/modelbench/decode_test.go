package main

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/train/model"
)

// residentChooser is kerneltest.Resident(ref) as a kernels.RowChooser
// (ref.ChooseRows): an allocating backend that chooses tokens where its
// logits live, counting what it holds, without a device.
type residentChooser struct{ *kerneltest.ResidentBackend }

func (residentChooser) ChooseRows(dst []kernels.RowChoice, logits []float32, V int, rows []int32, invTemp []float32, u []float64) {
	ref.ChooseRows(dst, logits, V, rows, invTemp, u)
}

// errAfter is a context whose Err reports cancellation from its n+1-th
// call on: the model checks it as a step goes, so a step after the first
// few fails.
type errAfter struct {
	context.Context
	n atomic.Int64
}

func (c *errAfter) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// TestDecodeFreesLogitsOnError: when a decode step fails (here its
// context is cancelled after the prefill and a step), the logits the
// previous step left in the backend's memory are freed with everything
// else the run allocated, as on success: choosing on the device
// (decodeDevice, StepDevice's logits) and on the host (StepInto's).
func TestDecodeFreesLogitsOnError(t *testing.T) {
	be := residentChooser{kerneltest.Resident(ref.New())}
	m, err := model.Load(filepath.Join("..", "..", "..", "serve", "testdata", "tiny"), be)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const tokens = 3
	for _, choose := range []string{"device", "host"} {
		run := func(ctx context.Context) error {
			_, err := decodeWorker(ctx, m, rand.New(rand.NewPCG(1, 2)), 1, 2, 4, tokens, false, choose, nil)
			return err
		}
		// How many checks a whole run takes, then a run cut short after
		// the prefill and one decode step's worth (the steps are alike).
		// What a whole run leaves (the model's pool of activation memory,
		// kept for the next step) is what any run may leave.
		probe := &errAfter{Context: context.Background()}
		probe.n.Store(1 << 40)
		if err := run(probe); err != nil {
			t.Fatal(err)
		}
		base := be.Live()
		if err := run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := be.Live(); n != base {
			t.Fatalf("choose %s: a second whole run left %d allocations, the first %d", choose, n, base)
		}
		perStep := (1<<40 - probe.n.Load()) / (tokens + 1)
		if perStep < 1 {
			t.Fatalf("choose %s: the model checked its context %d times a step: nothing to cut", choose, perStep)
		}
		cut := &errAfter{Context: context.Background()}
		cut.n.Store(2 * perStep)
		if err := run(cut); err == nil {
			t.Fatalf("choose %s: a run whose context was cancelled gave no error", choose)
		}
		if n := be.Live(); n != base {
			t.Errorf("choose %s: a run that failed at a decode step left %d allocations (%d bytes), want %d", choose, n, be.LiveBytes(), base)
		}
	}
}

package grpojob

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/hone-rl/hone/train/trainer"
)

// TestCountUpdatesStopsOnCancel: the count of a --norm art cosine run's
// updates ahead stops when the run's context ends (Ctrl-C), rather than
// building every step's job first: thousands of steps take seconds.
func TestCountUpdatesStopsOnCancel(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	in := filepath.Join(dir, "in.parquet")
	writeGroupsWith(t, md, in, 8, 4, func(g, i int) string { return "move 1" }, varied)
	_, gs := loadFixture(t, md, backend(t), in)
	o := baseOptions(md, dir, "r", in)
	o.Loss.Norm, o.GroupsPerStep = "art", 2
	sc := trainer.Order{N: len(gs), PerStep: 2, Seed: 1}
	if n, err := countUpdates(context.Background(), gs, sc, o, 0, 0, 4, 0); err != nil || n == 0 {
		t.Fatalf("the count: %d, %v", n, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := countUpdates(ctx, gs, sc, o, 0, 0, 4, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("the count under an ended context: %v, want context.Canceled", err)
	}
}

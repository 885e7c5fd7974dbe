package grpojob

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/internal/stageerr"
)

// TestUnscaledHugeRewardIsBadInputNamingRow: under --scale-rewards none
// the advantage is the reward less its group's mean, held as float32, so
// a reward of 1e50 (well under the 1e100 the std check allows) made the
// advantages +Inf and the step failed with "the gradient is not finite",
// naming no file or row and advising --lr. It is now bad input naming
// the file, row and --scale-rewards none, before anything is written;
// the same reward under the default group scaling still trains.
func TestUnscaledHugeRewardIsBadInputNamingRow(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	in := filepath.Join(dir, "big.parquet")
	writeGroups(t, md, in, 2, 3, func(g, i int) float64 {
		if g == 1 && i == 1 {
			return 1e50
		}
		return varied(g, i)
	})
	out := filepath.Join(dir, "adapters")
	o := baseOptions(md, out, "r", in)
	o.ScaleRewards = "none"
	err := runWith(context.Background(), backend(t), o, nil)
	if !errors.Is(err, stageerr.ErrBadInput) || !strings.Contains(err.Error(), in+" row 4") || !strings.Contains(err.Error(), "--scale-rewards none") {
		t.Fatalf("run on a reward of 1e50 under --scale-rewards none: %v; want bad input naming %s row 4 and --scale-rewards none", err, in)
	}
	if _, err := os.Stat(filepath.Join(out, "r", "step-000001")); !os.IsNotExist(err) {
		t.Errorf("a step was saved from the refused input (stat: %v)", err)
	}
	if err := runWith(context.Background(), backend(t), baseOptions(md, out, "g", in), nil); err != nil {
		t.Fatalf("the same input under --scale-rewards group: %v", err)
	}
}

// TestUnscaledHugeRewardTrainsUnderNormArt: --norm art divides the
// advantages by their mean magnitude over the step (artWeights) in
// float64 before any is held as a float32, so under --scale-rewards none
// a reward of 1e50 trains there as it did before the 1e38 bound; the
// bound, meant for advantages that reach the trainer undivided, refused
// it as bad input.
func TestUnscaledHugeRewardTrainsUnderNormArt(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	in := filepath.Join(dir, "big.parquet")
	writeGroups(t, md, in, 2, 3, func(g, i int) float64 {
		if g == 1 && i == 1 {
			return 1e50
		}
		return varied(g, i)
	})
	out := filepath.Join(dir, "adapters")
	o := baseOptions(md, out, "art", in)
	o.ScaleRewards, o.Loss.Norm = "none", "art"
	if err := runWith(context.Background(), backend(t), o, nil); err != nil {
		t.Fatalf("run on a reward of 1e50 under --scale-rewards none --norm art: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "art", "step-000001")); err != nil {
		t.Errorf("no step saved: %v", err)
	}
}

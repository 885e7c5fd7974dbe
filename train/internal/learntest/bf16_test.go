//go:build cgo

package learntest

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/train/model"
)

// bf16Seeds are the seeds TestBF16ComputeGRPO trains in both modes; the
// float32 runs' spread over them is the noise bf16 is judged against.
var bf16Seeds = []uint64{1, 2, 3}

// bf16Tail is how many final steps the training reward is averaged over.
const bf16Tail = 10

// TestBF16ComputeGRPO is the reward-curve check of the bf16 compute mode
// (issue 23): the GRPO run of TestGRPOLearns, with the base weights held
// as bfloat16 in both arms, once computing in float32 and once in the bf16
// mode (activations rounded to bfloat16, float32 accumulation), on the
// same seeds. The bf16 arm runs the portable micro-kernel: the native one
// (AVX512-BF16) does the same rounding, packing and float32 accumulation
// (TestConformanceBF16 checks both against the same reference), so this
// shows the mode's accuracy on any CPU.
//
// The noise is the float32 arm's spread over the seeds (max − min). Each
// bf16 run must learn (TestGRPOLearns's criterion), and its held-out reward
// after training and its mean training reward over the last bf16Tail steps
// must each lie no further below the float32 runs' lowest than that
// spread. The importance ratio on freshly sampled answers is allowed
// 1 ± 1e-3 in the bf16 arm (the decode and training products sum in
// different orders, and an activation near a bfloat16 rounding boundary
// can round either way), against 1e-5 in float32.
func TestBF16ComputeGRPO(t *testing.T) {
	// Minutes, not seconds: make test keeps to tests that train in seconds,
	// so this one runs in `make test-long` (which sets HONE_LONG_TESTS=1).
	if os.Getenv("HONE_LONG_TESTS") == "" || testing.Short() {
		t.Skip("trains six tiny models for 40 GRPO steps each, three with the slow portable bfloat16 kernel (3 min of CPU): run by `make test-long` (HONE_LONG_TESTS=1)")
	}
	type arm struct {
		name string
		opt  cpu.Options
		tol  float64
	}
	arms := []arm{
		{"f32", cpu.Options{Workers: 1, GEMM: "gonum"}, 1e-5},
		{"bf16", cpu.Options{Workers: 1, GEMM: "gonum", Compute: kernels.PrecisionBF16, BF16Kernel: "portable"}, 1e-3},
	}
	var mu sync.Mutex
	got := map[string][]curve{}
	t.Run("runs", func(t *testing.T) {
		for _, a := range arms {
			for _, seed := range bf16Seeds {
				t.Run(fmt.Sprintf("%s/seed%d", a.name, seed), func(t *testing.T) {
					t.Parallel()
					be, err := cpu.New(a.opt)
					if err != nil {
						t.Fatal(err)
					}
					defer be.Close()
					c := learnWith(t, seed, be, model.DTypeBFloat16, a.tol)
					if c.after-c.before < minGain {
						t.Errorf("held-out mean reward at T=1: before %.3f, after %.3f: rose by %.3f, want ≥ %.2f", c.before, c.after, c.after-c.before, minGain)
					}
					mu.Lock()
					got[a.name] = append(got[a.name], c)
					mu.Unlock()
					t.Logf("%s seed %d: held-out %.3f → %.3f (exact %.3f → %.3f); training reward by step %s", a.name, seed, c.before, c.after, c.exactBefore, c.exactAfter, fmtSeries(c.train))
				})
			}
		}
	})
	if t.Failed() {
		return
	}
	tail := func(c curve) float64 { return mean(c.train[len(c.train)-bf16Tail:]) }
	after := func(c curve) float64 { return c.after }
	for _, m := range []struct {
		name string
		f    func(curve) float64
	}{{"held-out reward after training", after}, {fmt.Sprintf("training reward over the last %d steps", bf16Tail), tail}} {
		var f32, bf16 []float64
		for _, c := range got["f32"] {
			f32 = append(f32, m.f(c))
		}
		for _, c := range got["bf16"] {
			bf16 = append(bf16, m.f(c))
		}
		lo, hi := slices.Min(f32), slices.Max(f32)
		floor := lo - (hi - lo)
		t.Logf("%s: f32 %s (spread %.3f), bf16 %s (floor %.3f)", m.name, fmtSorted(f32), hi-lo, fmtSorted(bf16), floor)
		if b := slices.Min(bf16); b < floor {
			t.Errorf("%s: bf16 compute reached %.3f, below the f32 runs' lowest %.3f by more than their spread %.3f", m.name, b, lo, hi-lo)
		}
	}
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func fmtSorted(xs []float64) string {
	ys := slices.Clone(xs)
	slices.Sort(ys)
	out := "["
	for i, y := range ys {
		if i > 0 {
			out += " "
		}
		out += fmt.Sprintf("%.3f", y)
	}
	return out + "]"
}

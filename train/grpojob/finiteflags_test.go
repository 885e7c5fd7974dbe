package grpojob

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/internal/stageerr"
)

// TestNotFiniteOptionsAreUsage: a float option given as NaN or ±Inf is a
// usage error naming its flag, refused before the run folder is made.
// These were taken: a run trained its first step, then failed saving it
// (exit code 1, the run folder left behind), since the run's config
// (JSON) cannot hold them; or, for the optimizer's, stopped at the first
// update as not finite with the advice to lower --lr.
func TestNotFiniteOptionsAreUsage(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	a := filepath.Join(dir, "a.parquet")
	writeGroups(t, md, a, 2, 3, varied)
	inf, nan := math.Inf(1), math.NaN()
	for flag, set := range map[string]func(*Options){
		"lr":            func(o *Options) { o.LR = inf },
		"min-lr":        func(o *Options) { o.MinLR = nan },
		"adam-beta1":    func(o *Options) { o.Beta1 = nan },
		"adam-beta2":    func(o *Options) { o.Beta2 = nan },
		"adam-eps":      func(o *Options) { o.AdamEps = inf },
		"weight-decay":  func(o *Options) { o.WeightDecay = nan },
		"max-grad-norm": func(o *Options) { o.MaxGradNorm = inf },
		"epsilon":       func(o *Options) { o.Loss.Epsilon = inf },
		"epsilon-high":  func(o *Options) { o.Loss.EpsilonHigh = inf },
		"beta":          func(o *Options) { o.Loss.Beta = inf },
		"tis":           func(o *Options) { o.Loss.TIS = inf },
		"max-is-weight": func(o *Options) { o.Loss.MaxISWeight = inf },
		"norm-constant": func(o *Options) { o.Loss.Norm, o.Loss.NormConstant = "constant", inf },
	} {
		out := filepath.Join(dir, "adapters-"+flag)
		o := baseOptions(md, out, "r", a)
		o.Steps = 1
		set(&o)
		err := runWith(context.Background(), backend(t), o, nil)
		if !errors.Is(err, stageerr.ErrUsage) || !strings.Contains(err.Error(), "--"+flag+" ") {
			t.Errorf("--%s not finite: %v, want a usage error naming the flag", flag, err)
		}
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("--%s not finite left %s behind (%v)", flag, out, err)
		}
	}
}

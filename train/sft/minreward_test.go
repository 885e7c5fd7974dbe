package sft

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/spf13/pflag"
)

// TestMinRewardNotFiniteIsUsage: --min-reward NaN, +Inf or -Inf is a
// usage error naming the flag, refused before anything is written. NaN
// filtered nothing (no reward is below NaN) and -Inf only the unscored,
// and both trained the first step, then failed saving it (exit code 1):
// the run's config, which holds the value, cannot be written as JSON.
// +Inf refused everything as "nothing to train" (bad input).
func TestMinRewardNotFiniteIsUsage(t *testing.T) {
	dir, md, _ := setup(t)
	var trajs []trajectory.Trajectory
	for i := range 4 {
		trajs = append(trajs, trajectory.Trajectory{ID: fmt.Sprint("t", i), Reward: trajectory.Float64(float64(i)), Messages: []trajectory.Message{
			{Role: "user", Content: fmt.Sprint("q", i)}, {Role: "assistant", Content: fmt.Sprint("a", i)},
		}})
	}
	data := filepath.Join(dir, "scored.parquet")
	if err := trajectory.WriteFile(context.Background(), data, []trajectory.Group{{ID: "g", Trajectories: trajs}}, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	be, err := cpu.New(cpu.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	for _, v := range []string{"NaN", "-Inf", "+Inf"} {
		var o Options
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse([]string{"--min-reward", v}); err != nil {
			t.Fatal(err)
		}
		if o.MinReward == nil || !(math.IsNaN(*o.MinReward) || math.IsInf(*o.MinReward, 0)) {
			t.Fatalf("--min-reward %s parsed as %v", v, o.MinReward)
		}
		o.Model, o.Out, o.Name, o.Inputs = md, dir, "r", fileset.Files(data)
		o.Rank, o.Steps, o.BatchSize, o.Backend = 4, 1, 2, be
		err := Run(context.Background(), o)
		if !errors.Is(err, stageerr.ErrUsage) || !strings.Contains(err.Error(), "--min-reward") {
			t.Errorf("--min-reward %s: %v, want a usage error naming --min-reward", v, err)
		}
		if _, err := os.Stat(filepath.Join(dir, "r")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("--min-reward %s: the run folder exists (%v)", v, err)
			os.RemoveAll(filepath.Join(dir, "r"))
		}
	}
}

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

// TestNegativeEpsilonIsUsage: a negative --epsilon or --epsilon-high, as
// parsed from the command line, is a usage error naming it, refused
// before the run folder is made. Any negative value was taken for the
// flag not given (its sentinel was −1 and Normalize tested < 0), so the
// run trained silently with the loss's default clip range instead.
func TestNegativeEpsilonIsUsage(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	a := filepath.Join(dir, "a.parquet")
	writeGroups(t, md, a, 2, 3, varied)
	for _, args := range [][]string{
		{"--epsilon", "-0.2"},
		{"--epsilon-high", "-0.5"},
		{"--loss", "ppo", "--epsilon", "-1"},
	} {
		out := filepath.Join(dir, "adapters"+strings.Join(args, ""))
		o := baseOptions(md, out, "r", a)
		fs := newFlagSet()
		o.AddFlags(fs)
		o.Model, o.Out, o.Name, o.Steps = md, out, "r", 1
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		err := runWith(context.Background(), backend(t), o, nil)
		if !errors.Is(err, stageerr.ErrUsage) || !strings.Contains(err.Error(), "epsilon") {
			t.Errorf("%v: %v, want a usage error naming the epsilon", args, err)
		}
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%v left %s behind (%v)", args, out, err)
		}
	}
	// Not given, each takes the loss's default.
	o := baseOptions(md, dir, "r", a)
	o.Loss.Loss = "ppo"
	o.Normalize()
	if o.Loss.Epsilon != 0.2 || o.Loss.EpsilonHigh != 0.2 {
		t.Errorf("ppo defaults: epsilon %v, epsilon-high %v; want 0.2 and 0.2", o.Loss.Epsilon, o.Loss.EpsilonHigh)
	}
}

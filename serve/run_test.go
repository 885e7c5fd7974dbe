package serve

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/kernels/ref"
)

// Run is the stage's one entry: the backend comes in Options, a model
// folder that does not load is bad input (hone-serve exits 2), and a run
// without a backend is a failure that says what is missing, not bad input.
func TestRunErrorKinds(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nonexistent")
	err := Run(context.Background(), Options{Model: missing, Port: 0, Backend: ref.New()})
	if !errors.Is(err, stageerr.ErrBadInput) || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing model folder: %v, want bad input naming it", err)
	}
	err = Run(context.Background(), Options{Model: tinyDir(t), Port: 0})
	if err == nil || errors.Is(err, stageerr.ErrBadInput) || !strings.Contains(err.Error(), "Backend") {
		t.Errorf("no backend: %v, want a failure naming Options.Backend", err)
	}
}

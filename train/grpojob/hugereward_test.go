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

// TestHugeRewardIsBadInputNamingRow: a finite reward so large that the
// squares behind the group's standard deviation overflow (1e200 beside 0)
// is bad input naming its file and row, before anything is written.
// Before, the std came out +Inf, the group's advantages 0, so the log
// said the group had "equal rewards (zero advantage)", and the step then
// failed saving with "checkpoint: state: json: unsupported value: +Inf"
// (exit 1, no file or row named).
func TestHugeRewardIsBadInputNamingRow(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	in := filepath.Join(dir, "huge.parquet")
	writeGroups(t, md, in, 2, 3, func(g, i int) float64 {
		if g == 1 && i == 1 {
			return 1e200
		}
		return varied(g, i)
	})
	out := filepath.Join(dir, "adapters")
	err := runWith(context.Background(), backend(t), baseOptions(md, out, "r", in), nil)
	if !errors.Is(err, stageerr.ErrBadInput) || !strings.Contains(err.Error(), in+" row 4") {
		t.Fatalf("run on a reward of 1e200: %v; want bad input naming %s row 4", err, in)
	}
	if _, err := os.Stat(filepath.Join(out, "r", "step-000001")); !os.IsNotExist(err) {
		t.Errorf("a step was saved from the refused input (stat: %v)", err)
	}
}

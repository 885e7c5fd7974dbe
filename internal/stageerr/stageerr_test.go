package stageerr_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hone-rl/hone/internal/stageerr"
)

func TestMarksKeepTextAndChain(t *testing.T) {
	base := fmt.Errorf("open a.parquet: %w", fs.ErrNotExist)
	for _, c := range []struct {
		name string
		err  error
		kind error
	}{
		{"Usage", stageerr.Usage(base), stageerr.ErrUsage},
		{"BadInput", stageerr.BadInput(base), stageerr.ErrBadInput},
		{"Usagef", stageerr.Usagef("--x: %w", base), stageerr.ErrUsage},
		{"BadInputf", stageerr.BadInputf("row 3: %w", base), stageerr.ErrBadInput},
	} {
		if !errors.Is(c.err, c.kind) || !errors.Is(c.err, fs.ErrNotExist) {
			t.Errorf("%s: %v does not match its kind and the error it marks", c.name, c.err)
		}
		var perr *fs.PathError
		if errors.As(c.err, &perr) {
			t.Errorf("%s: errors.As found a *fs.PathError that is not there", c.name)
		}
		other := stageerr.ErrBadInput
		if c.kind == stageerr.ErrBadInput {
			other = stageerr.ErrUsage
		}
		if errors.Is(c.err, other) || errors.Is(c.err, stageerr.ErrInterrupted) {
			t.Errorf("%s: %v matches another kind", c.name, c.err)
		}
	}
	if got := stageerr.Usage(base).Error(); got != base.Error() {
		t.Errorf("Usage changed the text to %q", got)
	}
	if stageerr.Usage(nil) != nil || stageerr.BadInput(nil) != nil || stageerr.Input(nil) != nil {
		t.Error("marking nil must stay nil")
	}
	// Wrapped further, the kind still shows.
	if err := fmt.Errorf("file b: %w", stageerr.BadInputf("bad")); !errors.Is(err, stageerr.ErrBadInput) {
		t.Error("wrapping lost the kind")
	}
}

// Input blames the input, except where the system failed or the run
// stopped.
func TestInput(t *testing.T) {
	dir := t.TempDir()
	_, missing := os.Open(filepath.Join(dir, "missing.parquet"))
	for _, c := range []struct {
		name string
		err  error
		bad  bool
	}{
		{"malformed", errors.New("a.parquet: not a Parquet file"), true},
		{"missing file", missing, true},
		{"read error", &fs.PathError{Op: "read", Path: "a", Err: syscall.EIO}, false},
		{"errno", fmt.Errorf("read: %w", syscall.EACCES), false},
		{"canceled", fmt.Errorf("read: %w", context.Canceled), false},
		{"deadline", context.DeadlineExceeded, false},
		{"interrupted", fmt.Errorf("%w: stop", stageerr.ErrInterrupted), false},
	} {
		got := stageerr.Input(c.err)
		if errors.Is(got, stageerr.ErrBadInput) != c.bad {
			t.Errorf("%s: Input(%v) bad input = %v, want %v", c.name, c.err, !c.bad, c.bad)
		}
		if !errors.Is(got, c.err) || got.Error() != c.err.Error() {
			t.Errorf("%s: Input changed the error to %v", c.name, got)
		}
	}
}

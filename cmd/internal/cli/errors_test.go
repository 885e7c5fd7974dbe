package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/internal/stageerr"
)

func TestExitCode(t *testing.T) {
	base := errors.New("base")
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, 0},
		{"plain", base, 1},
		{"wrapped plain", fmt.Errorf("read x: %w", base), 1},
		{"usage", Usage(base), 2},
		{"usagef", Usagef("bad flag %q", "--x"), 2},
		{"bad input", BadInput(base), 2},
		{"wrapped bad input", fmt.Errorf("file a.parquet: %w", BadInputf("row 3: %w", base)), 2},
		{"canceled", context.Canceled, 130},
		{"wrapped canceled", fmt.Errorf("write group 7: %w", context.Canceled), 130},
		{"interrupted", stageerr.ErrInterrupted, 130},
		{"wrapped interrupted", fmt.Errorf("%w after 3 groups: %w", stageerr.ErrInterrupted, context.Canceled), 130},
		{"stage usage", stageerr.Usagef("--policy %q: want model", "x"), 2},
		{"stage bad input", fmt.Errorf("scenario s1: %w", stageerr.Input(errors.New("not JSON"))), 2},
		{"canceled wins over usage", Usage(fmt.Errorf("x: %w", context.Canceled)), 130},
		{"deadline is a failure", context.DeadlineExceeded, 1},
	}
	for _, tc := range tests {
		if got := ExitCode(tc.err); got != tc.want {
			t.Errorf("%s: ExitCode(%v) = %d, want %d", tc.name, tc.err, got, tc.want)
		}
	}
	if Usage(nil) != nil || BadInput(nil) != nil {
		t.Error("marking nil must stay nil")
	}
	// Marking keeps the chain: errors.Is still sees the original.
	if err := BadInput(fmt.Errorf("open: %w", fs.ErrNotExist)); !errors.Is(err, fs.ErrNotExist) || err.Error() != "open: file does not exist" {
		t.Errorf("BadInput lost the chain or changed the text: %v", err)
	}
}

func TestRunPrintsOnceAndMapsCode(t *testing.T) {
	tests := []struct {
		err      error
		code     int
		contains []string
	}{
		{nil, 0, nil},
		{errors.New("disk full"), 1, []string{"tool: disk full\n"}},
		{Usagef("unknown flag --x"), 2, []string{"tool: unknown flag --x\n", "Run 'tool --help'"}},
		{ForCommand("tool sub", Usagef("unknown flag --x")), 2, []string{"tool: unknown flag --x\n", "Run 'tool sub --help'"}},
		{ForCommand("tool", fmt.Errorf("sub: %w", ForCommand("tool sub", Usagef("bad")))), 2, []string{"tool: sub: bad\n", "Run 'tool sub --help'"}},
		{ForCommand("tool sub", BadInputf("a.parquet: bad")), 2, []string{"tool: a.parquet: bad\n"}},
		{BadInputf("a.parquet: row 3: bad"), 2, []string{"tool: a.parquet: row 3: bad\n"}},
		{context.Canceled, 130, []string{"tool: context canceled\n"}},
	}
	for _, tc := range tests {
		var stderr bytes.Buffer
		code := Run(context.Background(), "tool", &stderr, func(ctx context.Context) error { return tc.err })
		if code != tc.code {
			t.Errorf("%v: code %d, want %d", tc.err, code, tc.code)
		}
		for _, c := range tc.contains {
			if !strings.Contains(stderr.String(), c) {
				t.Errorf("%v: stderr %q lacks %q", tc.err, stderr.String(), c)
			}
		}
		if !isUsageOnly(tc.err) && strings.Contains(stderr.String(), "--help") {
			t.Errorf("%v: not a usage error, yet stderr points to --help: %q", tc.err, stderr.String())
		}
		if tc.err == nil && stderr.Len() != 0 {
			t.Errorf("success printed %q", stderr.String())
		}
		if tc.err != nil && strings.Count(stderr.String(), "tool:") != 1 {
			t.Errorf("error printed more than once: %q", stderr.String())
		}
	}
}

func TestRunCancelsContextAfterReturn(t *testing.T) {
	var seen context.Context
	Run(context.Background(), "tool", &bytes.Buffer{}, func(ctx context.Context) error {
		if ctx.Err() != nil {
			t.Error("context cancelled before the run")
		}
		seen = ctx
		return nil
	})
	if seen.Err() == nil {
		t.Error("context still live after Run returned: its signal handler leaks")
	}
}

func TestRunWritesCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	t.Setenv(CPUProfileEnv, path)
	code := Run(context.Background(), "x", io.Discard, func(context.Context) error { return nil })
	if code != ExitOK {
		t.Fatalf("exit code %d", code)
	}
	st, err := os.Stat(path)
	if err != nil || st.Size() == 0 {
		t.Fatalf("profile not written: %v", err)
	}
	t.Setenv(CPUProfileEnv, filepath.Join(t.TempDir(), "missing", "cpu.pprof"))
	if code := Run(context.Background(), "x", io.Discard, func(context.Context) error { return nil }); code == ExitOK {
		t.Fatal("an unwritable profile path should fail the run")
	}
}

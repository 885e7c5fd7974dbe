package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
)

// classify decides between exit code 2 (the input is bad) and 1 (the run
// failed) for errors from the format package.
func TestClassify(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{nil, 0},
		{fmt.Errorf("trajectory: a.parquet: row 3 (group %q): split: bad", "g"), 2},
		{fmt.Errorf("trajectory: open a.parquet: %w", &fs.PathError{Op: "open", Path: "a.parquet", Err: syscall.ENOENT}), 2},
		{fmt.Errorf("trajectory: open a.parquet: %w", &fs.PathError{Op: "open", Path: "a.parquet", Err: syscall.EACCES}), 1},
		{fmt.Errorf("write: %w", syscall.ENOSPC), 1},
		{fmt.Errorf("read group: %w", context.Canceled), 130},
		{cli.Usagef("bad"), 2},
	}
	for _, tc := range tests {
		if got := cli.ExitCode(classify(tc.err)); got != tc.want {
			t.Errorf("classify(%v): exit %d, want %d", tc.err, got, tc.want)
		}
		if tc.err != nil && !errors.Is(classify(tc.err), tc.err) {
			t.Errorf("classify(%v) lost the error chain", tc.err)
		}
	}
}

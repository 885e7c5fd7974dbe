package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/trajectory"
)

// classify decides between exit code 2 (the input is bad) and 1 (the run
// failed) for errors from the format package.
func TestClassify(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{nil, 0},
		{&trajectory.InputError{File: "a.parquet", Row: 3, Group: "g", Field: "split", Err: errors.New("split: bad")}, 2},
		{fmt.Errorf("read all: %w", &trajectory.InputError{Row: -1, Err: errors.New("not parquet")}), 2},
		{errors.New("an error of no known kind"), 1},
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

//go:build unix

package main

import (
	"context"
	"path/filepath"
	"testing"
)

// TestPhasesSmall runs the write and read phases in-process at a tiny size.
func TestPhasesSmall(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "b.parquet")
	w, err := writePhase(ctx, options{rows: 50, groupSize: 8, rowGroup: 1 << 16, file: path})
	if err != nil {
		t.Fatal(err)
	}
	r, err := readPhase(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if w.Rows != 50 || r.Rows != 50 || r.Tokens != 50*300 || r.Bytes != w.Bytes || w.Bytes == 0 {
		t.Errorf("write %+v, read %+v", w, r)
	}
}

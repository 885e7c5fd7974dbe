package grpojob

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/internal/stageerr"
)

// TestNoGroupsNamesObjectWithoutQuery: an input object with no groups is
// bad input naming the object as the user names it, without the query
// that opens its bucket (endpoint=…&use_path_style=…), which said nothing
// of which input was empty and put the store's address in the message.
func TestNoGroupsNamesObjectWithoutQuery(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	s := startObjectGets(t, "bkt")
	name := "s3://bkt/in/round1.parquet" + s.query
	writeGroups(t, md, name, 0, 3, varied)
	err := runWith(context.Background(), backend(t), baseOptions(md, filepath.Join(dir, "adapters"), "r", name), nil)
	if !errors.Is(err, stageerr.ErrBadInput) || !strings.Contains(err.Error(), "no groups in s3://bkt/in/round1.parquet") || strings.Contains(err.Error(), "endpoint=") {
		t.Errorf("run on an object with no groups: %v; want bad input naming s3://bkt/in/round1.parquet without its query", err)
	}
}

// TestInfiniteRewardNamesObjectRowWithoutQuery: a row with an infinite
// reward is bad input naming it as "FILE row N", FILE as the user names
// the object, without the query that opens its bucket
// (endpoint=…&use_path_style=…), which put the store's address in the
// message for every row listed.
func TestInfiniteRewardNamesObjectRowWithoutQuery(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	s := startObjectGets(t, "bkt")
	name := "s3://bkt/in/round1.parquet" + s.query
	writeGroups(t, md, name, 2, 3, func(g, i int) float64 {
		if g == 1 && i == 2 {
			return math.Inf(1)
		}
		return varied(g, i)
	})
	err := runWith(context.Background(), backend(t), baseOptions(md, filepath.Join(dir, "adapters"), "r", name), nil)
	if !errors.Is(err, stageerr.ErrBadInput) || !strings.Contains(err.Error(), "s3://bkt/in/round1.parquet row 5") || strings.Contains(err.Error(), "endpoint=") {
		t.Errorf("run on an object with an infinite reward: %v; want bad input naming s3://bkt/in/round1.parquet row 5 without its query", err)
	}
}

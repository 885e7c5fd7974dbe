package fileset

import (
	"context"
	"slices"
	"testing"

	"gocloud.dev/blob"
)

// TestS3KeysWithEmptyElement lists a folder holding keys that another
// tool wrote with an empty element ("q//b.parquet", which no name this
// package takes can open, since a URL's runs of "/" are made one): the
// empty element is no folder in q — listed, it named q itself, and a walk
// of the folders went round in it — and the key is no file in q either.
func TestS3KeysWithEmptyElement(t *testing.T) {
	s := newFaultyS3(t, "bkt")
	ctx := context.Background()
	b, err := blob.OpenBucket(ctx, "s3://bkt"+s.srv.Query())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, k := range []string{"q//b.parquet", "q/c/d.parquet", "q/e.parquet"} {
		if err := b.WriteAll(ctx, k, []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
	}
	q := s.url("bkt", "q")
	dirs, err := ListDirs(ctx, q)
	if want := []string{s.url("bkt", "q/c")}; err != nil || !slices.Equal(dirs, want) {
		t.Errorf("ListDirs(q) = %q, %v; want %q", dirs, err, want)
	}
	files, err := List(ctx, q, ".parquet")
	if want := []string{s.url("bkt", "q/e.parquet")}; err != nil || !slices.Equal(files, want) {
		t.Errorf("List(q) = %q, %v; want %q", files, err, want)
	}
}

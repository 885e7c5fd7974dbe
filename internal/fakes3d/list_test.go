package fakes3d

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
)

// The fake lists as S3 does, a page of at most 1000 entries at a time,
// so a client that reads only the first page fails here as against S3:
// 2500 objects take 3 pages. A folder of 1200 step folders lists each
// once; before, gofakes3 ended the first page inside step-999/ and began
// the second with step-999/ again, so ListDirs gave it twice. A folder
// holding only its marker object ("m/empty/") is a folder, as S3 rolls
// it into a common prefix; before, it was listed as an object of m/ and
// ListDirs missed it.
func TestListPagesAsS3(t *testing.T) {
	s := StartTest(t, "bkt")
	ctx := context.Background()
	put := func(key string) {
		t.Helper()
		if _, err := s.be.PutObject("bkt", key, map[string]string{}, bytes.NewReader([]byte(key)), int64(len(key)), nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2500 {
		put(fmt.Sprintf("d/f%04d.parquet", i))
	}
	for i := range 1200 {
		put(fmt.Sprintf("r/step-%d/a", i))
		put(fmt.Sprintf("r/step-%d/b", i))
	}
	for _, k := range []string{"m/", "m/empty/", "m/x.parquet", "m/sub/y.parquet"} {
		put(k)
	}
	gets := s.Requests(http.MethodGet)
	names, err := fileset.List(ctx, s.URL("bkt", "d"), ".parquet")
	if err != nil || len(names) != 2500 {
		t.Fatalf("listed %d objects of 2500, %v", len(names), err)
	}
	if n := s.Requests(http.MethodGet) - gets; n != 3 {
		t.Errorf("2500 objects listed in %d requests; want 3 pages of at most 1000", n)
	}
	dirs, err := fileset.ListDirs(ctx, s.URL("bkt", "r"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, d := range dirs {
		if seen[d] {
			t.Errorf("ListDirs gave %s twice", strings.Split(d, "?")[0])
		}
		seen[d] = true
	}
	if len(seen) != 1200 {
		t.Errorf("ListDirs gave %d folders of 1200", len(seen))
	}
	dirs, err = fileset.ListDirs(ctx, s.URL("bkt", "m"))
	if want := s.URL("bkt", "m/empty") + " " + s.URL("bkt", "m/sub"); err != nil || strings.Join(dirs, " ") != want {
		t.Errorf("ListDirs(m): %q, %v; want %q", dirs, err, want)
	}
	if got, err := fileset.List(ctx, s.URL("bkt", "m"), ""); err != nil || strings.Join(got, " ") != s.URL("bkt", "m/x.parquet") {
		t.Errorf("List(m): %q, %v", got, err)
	}
}

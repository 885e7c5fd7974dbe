package trajectory

import (
	"context"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/fileset/s3test"
)

// TestReadErrorsNameObjectWithoutQuery: a bad object input (not Parquet;
// a trajectory id given twice) is named as the user names it, without
// the query that opens its bucket (endpoint=…&use_path_style=…), which
// said nothing of which file was bad and put the store's address in the
// message. The objects are in a real S3 protocol server (gofakes3).
func TestReadErrorsNameObjectWithoutQuery(t *testing.T) {
	s3 := s3test.Start(t, s3test.Options{Buckets: []string{"bkt"}})
	ctx := context.Background()
	check := func(what string, err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "endpoint=") {
			t.Errorf("%s: %v; want an error with %q and without the bucket query", what, err, want)
		}
	}
	junk := s3.URL("bkt", "in/junk.parquet")
	if err := fileset.WriteFile(ctx, junk, []byte("not parquet at all")); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(ctx, junk)
	check("a file that is not Parquet", err, "s3://bkt/in/junk.parquet: not a readable trajectory file")

	msgs := []Message{{Role: "user", Content: "q"}, {Role: "assistant", Content: "a"}}
	group := func(gid string) Group {
		return Group{ID: gid, Trajectories: []Trajectory{{Run: "r", GroupID: gid, ID: "t", Env: "e", Messages: msgs}}}
	}
	err = WriteFile(ctx, s3.URL("bkt", "bad/dup.parquet"), []Group{group("g1"), group("g2")}, WriterOptions{})
	check("a write of a trajectory id given twice", err, "write s3://bkt/bad/dup.parquet:")

	for _, gid := range []string{"a", "b"} {
		if err := WriteFile(ctx, s3.URL("bkt", "dup/"+gid+".parquet"), []Group{group(gid)}, WriterOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	set, err := fileset.Resolve(ctx, []string{s3.URL("bkt", "dup/")}, fileset.Options{Ext: ".parquet"})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	_, err = ReadAll(ctx, set)
	check("a trajectory id in two files", err, `s3://bkt/dup/b.parquet: row 0 (group "b"): trajectory_id "t" duplicates s3://bkt/dup/a.parquet row 0`)
}

package fileset

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// TestArgErrorsNameObjectWithoutQuery: an argument error about an object
// URL (no such object, a glob matching none, a folder without input
// files, a folder named where an object is wanted), and the error of a
// store failing a stat, quote the argument as the user names it, without
// the query that opens its bucket (endpoint=…&use_path_style=…), which says nothing of what is
// wrong; the errors about the bucket (open bucket, no such bucket) keep
// it, as the query says which store was asked. All of them printed it.
func TestArgErrorsNameObjectWithoutQuery(t *testing.T) {
	s3 := newFaultyS3(t, "bkt")
	ctx := context.Background()
	putObject(t, s3.url("bkt", "in/a.parquet"), []byte("x"))
	putObject(t, s3.url("bkt", "other/a.txt"), []byte("x"))
	check := func(what string, err error, want string) {
		t.Helper()
		if !errors.Is(err, ErrBadArgument) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "endpoint=") {
			t.Errorf("%s: %v; want a bad argument quoting %s without the bucket query", what, err, want)
		}
	}
	_, err := Resolve(ctx, []string{s3.url("bkt", "in/b.parquet")}, Options{})
	check("a missing object", err, `"s3://bkt/in/b.parquet": no such file`)
	_, err = Resolve(ctx, []string{s3.url("bkt", "in/*.jsonl")}, Options{})
	check("a glob matching nothing", err, `"s3://bkt/in/*.jsonl": glob matches no files`)
	_, err = Resolve(ctx, []string{s3.url("bkt", "other/")}, Options{Ext: ".parquet"})
	check("a folder without input files", err, `"s3://bkt/other/": directory has no *.parquet files`)
	_, err = StatFile(ctx, s3.url("bkt", "in/"))
	check("a folder named as an object", err, `"s3://bkt/in/": names a folder`)

	// A store that fails: not the argument's fault, and still named so.
	s3.mu.Lock()
	s3.fail, s3.failOn = 10, http.MethodHead
	s3.mu.Unlock()
	_, err = Resolve(ctx, []string{s3.url("bkt", "in/a.parquet")}, Options{})
	if err == nil || !strings.Contains(err.Error(), `"s3://bkt/in/a.parquet": `) || strings.Contains(err.Error(), "endpoint=") {
		t.Errorf("a store failing a stat: %v; want an error quoting s3://bkt/in/a.parquet without the bucket query", err)
	}
	s3.mu.Lock()
	s3.fail = 0
	s3.mu.Unlock()

	_, err = Resolve(ctx, []string{s3.url("nobkt", "x.parquet")}, Options{})
	if !errors.Is(err, ErrNoBucket) || !strings.Contains(err.Error(), s3.url("nobkt", "x.parquet")) {
		t.Errorf("an object in a missing bucket: %v; want the URL with its query, which names the store asked", err)
	}
}

package fakes3d

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
)

// The server takes writes and ranged reads through fileset, as the stages
// make them, and counts what it served.
func TestServerRoundTrip(t *testing.T) {
	s := StartTest(t, "bkt")
	ctx := context.Background()
	out, err := fileset.Create(ctx, s.URL("bkt", "dir/x.txt"))
	if err != nil {
		t.Fatal(err)
	}
	out.Write([]byte("hello, object"))
	if err := out.Commit(); err != nil {
		t.Fatal(err)
	}
	set, err := fileset.Resolve(ctx, []string{s.URL("bkt", "dir")}, fileset.Options{Ext: ".txt"})
	if err != nil {
		t.Fatal(err)
	}
	if set.Len() != 1 || set.Name(0) != s.URL("bkt", "dir/x.txt") {
		t.Fatalf("resolved %q", set.Names())
	}
	f, err := set.Open(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, _ := io.ReadAll(f.Reader())
	if string(b) != "hello, object" {
		t.Errorf("read %q", b)
	}
	if s.Requests(http.MethodPut) != 1 || s.SentBytes() < int64(len(b)) {
		t.Errorf("counted %d PUTs, %d bytes sent", s.Requests(http.MethodPut), s.SentBytes())
	}
	if _, err := fileset.Open(ctx, s.URL("nobucket", "x.txt")); err == nil {
		t.Error("a bucket that was not made opened")
	}
}

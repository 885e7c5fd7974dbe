package fakes3d

import (
	"context"
	"errors"
	"io"
	"io/fs"
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

// RefuseWrites answers writes and deletes 403 while it is on, and only
// then: reads go on, and a write works again once it is switched off.
func TestRefuseWrites(t *testing.T) {
	s := StartTest(t, "bkt")
	ctx := context.Background()
	name := s.URL("bkt", "x.txt")
	if err := fileset.WriteFile(ctx, name, []byte("one")); err != nil {
		t.Fatal(err)
	}
	s.RefuseWrites(true)
	err := fileset.WriteFile(ctx, name, []byte("two"))
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		t.Errorf("a write while refusing: %v, want a permission error", err)
	}
	if err := fileset.Remove(ctx, name); err == nil {
		t.Error("a delete while refusing worked")
	}
	if b, err := fileset.ReadFile(ctx, name); err != nil || string(b) != "one" {
		t.Errorf("a read while refusing: %q, %v; want the object as it was", b, err)
	}
	if s.Refused() != 2 {
		t.Errorf("Refused() = %d after a refused write and delete, want 2", s.Refused())
	}
	s.RefuseWrites(false)
	if err := fileset.WriteFile(ctx, name, []byte("three")); err != nil {
		t.Errorf("a write once the refusal is off: %v", err)
	}
}

package fakes3d

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/internal/waitfor"
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

// Stall holds each request unanswered until the client gives up on it or
// the stall is switched off, when it is served.
func TestStall(t *testing.T) {
	s := StartTest(t, "bkt")
	name := s.URL("bkt", "x.txt")
	if err := fileset.WriteFile(context.Background(), name, []byte("one")); err != nil {
		t.Fatal(err)
	}
	s.Stall(true)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := fileset.ReadFile(ctx, name); err == nil || ctx.Err() == nil {
		t.Fatalf("a read from a stalled server: %v, want the client's deadline to end it", err)
	}
	if s.Stalled() < 1 {
		t.Errorf("Stalled() = %d after a read was held", s.Stalled())
	}
	got := make(chan error, 1)
	go func() {
		b, err := fileset.ReadFile(context.Background(), name)
		if err == nil && string(b) != "one" {
			err = fmt.Errorf("read %q, want %q", b, "one")
		}
		got <- err
	}()
	// The second read is held (Stalled counts it) before the stall is
	// switched off, so it is served from the stall, not after it.
	if !waitfor.Within(10*time.Second, func() bool { return s.Stalled() >= 2 }) {
		t.Fatalf("the second read was not held: Stalled() = %d", s.Stalled())
	}
	s.Stall(false)
	if err := <-got; err != nil {
		t.Errorf("a held read once the stall is off: %v", err)
	}
}

package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDeadServerWritesNothing: a model server that refuses every
// connection stops the run after its first group (collect.ErrUnreachable),
// exit 1, naming the server, and an existing output is left as it was,
// as for a model that is not served: the run wrote a file of failed rows
// over it once every episode had spent its retries.
func TestDeadServerWritesNothing(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + "/v1"
	l.Close()
	out := filepath.Join(t.TempDir(), "o.parquet")
	os.WriteFile(out, []byte("the previous round"), 0o644)
	r := collectBin(t, "--env", "guess", "--groups", "30", "-G", "2", "--model", "m", "--base-url", url, "--retries", "0", "-o", out)
	if r.code != 1 || !strings.Contains(r.stderr, "connection refused") || !strings.Contains(r.stderr, url) {
		t.Fatalf("exit %d, stderr %q; want exit 1 naming the refused server", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(out); string(b) != "the previous round" {
		t.Errorf("the existing output was replaced (%d bytes): %s", len(b), r.stderr)
	}
}

// TestUnknownHostWritesNothing: a --base-url whose host does not resolve
// (a typo of localhost) stops the run after its first group, exit 1,
// naming the failed host lookup, and an existing output is left as it
// was: the run played every episode with its retries and wrote a file of
// failed rows over it. The host is under .invalid (RFC 2606), which never
// resolves, and offline fails its lookup as fast.
func TestUnknownHostWritesNothing(t *testing.T) {
	const url = "http://hone-test.invalid:8000/v1"
	out := filepath.Join(t.TempDir(), "o.parquet")
	os.WriteFile(out, []byte("the previous round"), 0o644)
	r := collectBin(t, "--env", "guess", "--groups", "30", "-G", "2", "--model", "m", "--base-url", url, "--retries", "0", "-o", out)
	if r.code != 1 || !strings.Contains(r.stderr, "look up the host hone-test.invalid") || !strings.Contains(r.stderr, url) {
		t.Fatalf("exit %d, stderr %q; want exit 1 naming the failed lookup of the host", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(out); string(b) != "the previous round" {
		t.Errorf("the existing output was replaced (%d bytes): %s", len(b), r.stderr)
	}
}

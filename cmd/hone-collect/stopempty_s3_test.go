package main

import (
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect/openaitest"
	"github.com/hone-rl/hone/internal/fakes3d"
)

// TestTooManyFailuresBeforeAnyGroupS3: a --max-failures stop before any
// group finished, writing to an object: nothing is uploaded, and stderr
// says so naming the object as every other message does, without the
// URL's query (the bucket's endpoint and region), which it printed whole.
func TestTooManyFailuresBeforeAnyGroupS3(t *testing.T) {
	srv := openaitest.New(func(openaitest.Request) openaitest.Reply { return openaitest.Reply{Content: "16"} })
	defer srv.Close()
	// The first call fails; any later one hangs until the stop cuts it.
	srv.SetFault(func(n int64) openaitest.Fault {
		if n == 1 {
			return openaitest.Status500
		}
		return openaitest.Hang
	})
	s3 := fakes3d.StartTest(t, "hone")
	out := s3.URL("hone", "runs/o.parquet")
	r := collectBin(t, "--env", "guess", "--groups", "2", "-G", "2", "--concurrency", "1", "--max-turns", "1", "--model", "m",
		"--base-url", srv.BaseURL(), "--retries", "0", "--max-failures", "0", "-o", out)
	if r.code != 1 || !strings.Contains(r.stderr, "more than --max-failures 0 allows") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	// One PUT is the output's write check at start (its object deleted).
	if n := s3.Requests("PUT") + s3.Requests("POST"); n != 1 {
		t.Errorf("%d upload requests after a stop before any group: %s", n, r.stderr)
	}
	if !strings.Contains(r.stderr, "nothing was written; an existing s3://hone/runs/o.parquet is left as it was") {
		t.Errorf("stderr does not name the object without its query:\n%s", r.stderr)
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect/openaitest"
)

// TestTooManyFailuresBeforeAnyGroupWritesNothing: --max-failures 0 stops
// at the first failed episode; when that comes before any group finished,
// an existing output stays as it was and stderr says nothing was written.
// The stop committed a Parquet file of 0 rows over it, as an interrupt
// did before TestInterruptBeforeAnyGroupWritesNothing.
func TestTooManyFailuresBeforeAnyGroupWritesNothing(t *testing.T) {
	srv := openaitest.New(func(openaitest.Request) openaitest.Reply { return openaitest.Reply{Content: "16"} })
	defer srv.Close()
	// The first call fails; any later one hangs until the stop cuts it,
	// so group 0's second episode cannot finish the group.
	srv.SetFault(func(n int64) openaitest.Fault {
		if n == 1 {
			return openaitest.Status500
		}
		return openaitest.Hang
	})
	out := filepath.Join(t.TempDir(), "o.parquet")
	os.WriteFile(out, []byte("the previous round"), 0o644)
	r := collectBin(t, "--env", "guess", "--groups", "2", "-G", "2", "--concurrency", "1", "--max-turns", "1", "--model", "m",
		"--base-url", srv.BaseURL(), "--retries", "0", "--max-failures", "0", "-o", out)
	if r.code != 1 || !strings.Contains(r.stderr, "1 failed, more than --max-failures 0 allows") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(out); string(b) != "the previous round" {
		t.Errorf("the existing output was replaced (%d bytes): %s", len(b), r.stderr)
	}
	if !strings.Contains(r.stderr, "nothing was written") {
		t.Errorf("stderr does not say that nothing was written:\n%s", r.stderr)
	}
}

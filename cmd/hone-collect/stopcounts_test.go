package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect/openaitest"
)

// TestStopBeforeAnyGroupCountsTheFailure: a --max-failures stop before
// any group finished has its summary count the episode that failed. The
// summary said "0/2 groups, 0 episodes (0 failed)" above "1 failed, more
// than --max-failures 0 allows": its counts were of finished groups
// alone, without a word. Nor does it give a rate of episodes, which
// counts those written alone.
func TestStopBeforeAnyGroupCountsTheFailure(t *testing.T) {
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
	r := collectBin(t, "--env", "guess", "--groups", "2", "-G", "2", "--concurrency", "1", "--max-turns", "1", "--model", "m",
		"--base-url", srv.BaseURL(), "--retries", "0", "--max-failures", "0", "-o", out)
	if r.code != 1 || !strings.Contains(r.stderr, "1 failed, more than --max-failures 0 allows") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	sum := regexp.MustCompile(`(?m)^hone-collect: 0/2 groups, .*$`).FindString(r.stderr)
	if !strings.Contains(sum, "0 episodes (0 failed) written") || !strings.Contains(sum, "1 episode (1 failed) of groups not finished, not written") {
		t.Errorf("summary %q does not count the failed episode of the unfinished group:\n%s", sum, r.stderr)
	}
	// The rate was of written episodes: "0.00 episodes/s" for a run
	// whose episodes ran, none written.
	if strings.Contains(sum, "episodes/s") {
		t.Errorf("summary %q gives a rate of episodes for a run that wrote none", sum)
	}
}

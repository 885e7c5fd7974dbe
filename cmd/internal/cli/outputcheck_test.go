package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/fakes3d"
)

// TestOutputCheckOfStalledStoreGivesUp: the checks of an object-store
// output at start are abandoned after their deadline when the store
// takes the connection and never answers, with an error naming the
// output and the deadline. They ran on the stage's context alone, so a
// stalled store held the start for ever.
func TestOutputCheckOfStalledStoreGivesUp(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	s3.Stall(true)
	const limit = 2 * time.Second
	start := time.Now()
	out, err := openOutput(t.Context(), s3.URL("hone", "round/o.parquet"), &bytes.Buffer{}, true, limit)
	if err == nil {
		out.Close()
		t.Fatal("a stalled store's output was opened")
	}
	if took := time.Since(start); took > limit+30*time.Second {
		t.Errorf("the check gave up after %v; want about %v", took, limit)
	}
	if !strings.Contains(err.Error(), "s3://hone/round/o.parquet") || !strings.Contains(err.Error(), "did not answer") || ExitCode(err) != ExitFailure {
		t.Errorf("error %v (exit %d); want exit 1 naming the output and that the store did not answer", err, ExitCode(err))
	}
	if s3.Stalled() == 0 {
		t.Error("no request reached the stalled store")
	}
}

package grpojob

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// TestNoLogprobsRowsAreNotWarnedOfAsBig: a trajectory left out because
// its trainable turn has no sampling logprob was first checked for
// length, so with a small --token-budget the log warned that it was "a
// micro-batch of its own ... memory grows with it", naming rows that
// never train, beside the warning that they are left out. The logprob
// check now comes first: only the no-logprobs warning names them.
func TestNoLogprobsRowsAreNotWarnedOfAsBig(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	in := filepath.Join(dir, "plain.parquet")
	writeGroups(t, md, in, 2, 2, varied)
	r, err := trajectory.ReadFile(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	for i := range r[0].Trajectories { // group 0 only: group 1 trains
		m := &r[0].Trajectories[i].Messages[2]
		m.TokenIDs, m.Logprobs = nil, nil
	}
	if err := trajectory.WriteFile(context.Background(), in, r, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	o := baseOptions(md, filepath.Join(dir, "out"), "r", in)
	o.TokenBudget = 4 // every row is over it
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatal(err)
	}
	var big string
	for _, line := range strings.Split(log.String(), "\n") {
		if strings.Contains(line, "more tokens than --token-budget") {
			big = line
		}
	}
	if !strings.Contains(big, "2 trajectories") || strings.Contains(big, "row 0 ") || strings.Contains(big, "row 1 ") {
		t.Errorf("the --token-budget warning should name rows 2 and 3 only (0 and 1 have no logprobs):\n%s", log.String())
	}
	if !strings.Contains(log.String(), "2 of 4 scored trajectories have trainable tokens without a sampling logprob") {
		t.Errorf("no warning of the rows without logprobs:\n%s", log.String())
	}
}

package grpojob

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// TestNoLogprobsWarnsNamingTheFlag: trajectories whose trainable turns
// carry no token ids or logprobs (sampled by a server that returned none)
// are left out of training, and the run says so once, as a warning naming
// the rows and --allow-no-logprobs. Each step only counted them in an info
// line ("nothing to train … 2 without sampled logprobs"), so a run on such
// files wrote its steps untrained and exited 0 without naming the flag.
// With --allow-no-logprobs they train and nothing is said.
func TestNoLogprobsWarnsNamingTheFlag(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	in := filepath.Join(dir, "plain.parquet")
	writeGroups(t, md, in, 2, 2, varied)
	r, err := trajectory.ReadFile(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	for g := range r {
		for i := range r[g].Trajectories {
			m := &r[g].Trajectories[i].Messages[2]
			m.TokenIDs, m.Logprobs = nil, nil
		}
	}
	if err := trajectory.WriteFile(context.Background(), in, r, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, allow := range []bool{false, true} {
		var log bytes.Buffer
		o := baseOptions(md, filepath.Join(dir, "out"), map[bool]string{false: "strict", true: "allowed"}[allow], in)
		o.AllowNoLogprobs = allow
		if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
			t.Fatal(err)
		}
		warned := strings.Contains(log.String(), "level=WARN") && strings.Contains(log.String(), "--allow-no-logprobs trains them")
		if warned == allow {
			t.Errorf("--allow-no-logprobs=%v: warned %v:\n%s", allow, warned, log.String())
		}
		if !allow && !strings.Contains(log.String(), "4 of 4 scored trajectories") {
			t.Errorf("the warning does not count the trajectories:\n%s", log.String())
		}
		if !allow && !strings.Contains(log.String(), "plain.parquet row 0 (group") {
			t.Errorf("the warning does not name the rows:\n%s", log.String())
		}
		rows := readMetrics(t, filepath.Join(dir, "out", o.Name))
		trained := 0.0
		for _, row := range rows {
			trained += row["trajectories_trained"]
		}
		if (trained > 0) != allow {
			t.Errorf("--allow-no-logprobs=%v: %v trajectories trained", allow, trained)
		}
	}
}

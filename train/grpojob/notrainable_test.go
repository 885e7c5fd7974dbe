package grpojob

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// TestNoTrainableTurnWarnsOnce: trajectories whose assistant turns are not
// marked trainable (a plain chat log, or ART's plain assistant messages,
// which ART too keeps as context) are left out of training, and the run
// says so once, as a warning naming the rows, the trainable field and that
// --allow-no-logprobs does not train them (ART's
// allow_training_without_logprobs trains such messages). Each step only
// counted them in an info line ("nothing to train … 4 without trainable
// tokens"), so a run on such files wrote its steps untrained and exited 0.
func TestNoTrainableTurnWarnsOnce(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	in := filepath.Join(dir, "context.parquet")
	writeGroups(t, md, in, 2, 2, varied)
	r, err := trajectory.ReadFile(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	for g := range r {
		for i := range r[g].Trajectories {
			m := &r[g].Trajectories[i].Messages[2]
			m.Trainable, m.TokenIDs, m.Logprobs = false, nil, nil
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
		text := log.String()
		if n := strings.Count(text, "level=WARN"); n != 1 || !strings.Contains(text, "4 of 4 scored trajectories have no trainable turn") ||
			!strings.Contains(text, "context.parquet row 0 (group") || !strings.Contains(text, "has trainable: true") || !strings.Contains(text, "--allow-no-logprobs does not") {
			t.Errorf("--allow-no-logprobs=%v: %d warnings, want one counting 4 of 4, naming the rows, the trainable field and the flag:\n%s", allow, n, text)
		}
	}
}

package grpojob

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// TestNoTrainableWarningUnderAllowNoLogprobs: the warning of rows with no
// trainable turn said only turns "with the token_ids and logprobs their
// server sampled" train, and suggested nothing about the flag given,
// under --allow-no-logprobs too, where a marked turn trains without them.
// Under the flag it now says that a marked turn trains without logprobs
// and that the flag marks none; without it the wording is as before.
func TestNoTrainableWarningUnderAllowNoLogprobs(t *testing.T) {
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
		sampled := strings.Contains(text, "with the token_ids and logprobs their server sampled")
		given := strings.Contains(text, "under --allow-no-logprobs, as given, a turn marked trainable trains without sampled logprobs, but --allow-no-logprobs does not make a turn trainable")
		if sampled == allow || given != allow {
			t.Errorf("--allow-no-logprobs=%v: the warning does not fit the flag:\n%s", allow, text)
		}
	}
}

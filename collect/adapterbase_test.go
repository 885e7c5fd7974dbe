package collect_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/hone-rl/hone/collect"
	"github.com/hone-rl/hone/format/trajectory"
)

// TestRunBaseModelAdapterIsServedName pins what trajectory.Trajectory's
// Adapter holds for an episode the base model answered: the model the
// server answered with, which for the real hone-serve's base model is its
// served name (the folder's, "tiny"), not "" as the field's doc said.
// Readers take it as a name only (hone-inspect log-eval parses a
// "<run>@<N>" step out of it), so "" is not a sign of the base model.
func TestRunBaseModelAdapterIsServedName(t *testing.T) {
	upstream := startTinyServe(t)
	tr := guessEpisode(t, upstream, 1, 4)
	if tr.Model != "tiny" || tr.Adapter != "tiny" || tr.Step != 0 {
		t.Errorf("base model's episode: model %q, adapter %q, step %d; want model and adapter tiny (the served name), step 0", tr.Model, tr.Adapter, tr.Step)
	}
}

// guessEpisode runs one guess episode of up to maxTurns turns, answered
// through the model policy by the server at base (temperature 1, up to
// maxTokens a turn), and returns its one trajectory, failing the test when
// there is not exactly one or it errored.
func guessEpisode(t *testing.T, base string, maxTurns, maxTokens int) trajectory.Trajectory {
	t.Helper()
	var out bytes.Buffer
	temp := 1.0
	o := collect.Options{
		Env: "guess", Groups: 1, GroupSize: 1, Concurrency: 1, MaxTurns: maxTurns, Seed: 3, Run: "r", Policy: "model", Out: &out,
		Model: collect.ModelOptions{BaseURL: base + "/v1", Model: "tiny", Temperature: &temp, MaxTokens: maxTokens, Backoff: time.Millisecond},
	}
	if _, err := runStats(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	gs := readGroups(t, out.Bytes())
	if len(gs) != 1 || len(gs[0].Trajectories) != 1 {
		t.Fatalf("%d groups, want 1 of 1 trajectory", len(gs))
	}
	tr := gs[0].Trajectories[0]
	if tr.Error != "" {
		t.Fatalf("episode error %q", tr.Error)
	}
	return tr
}

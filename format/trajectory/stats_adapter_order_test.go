package trajectory

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
)

// TestStatsByAdapterOrdersByTheServedStep: a run's adapters are listed in
// the order of the step their name carries, also for rows whose own step
// disagrees with it (rows imported with step 0). Before, by_adapter sorted
// by the rows' step, and "rl@10" rows of step 0 came before rl@2.
func TestStatsByAdapterOrdersByTheServedStep(t *testing.T) {
	served := []struct {
		adapter string
		step    int64
	}{{"rl@10", 0}, {"rl@2", 2}, {"rl@10", 10}, {"rl@3", 3}, {"qwen3", 5}, {"qwen3", 1}, {"", 4}}
	var groups []Group
	for i, s := range served {
		id := fmt.Sprintf("g%d", i)
		groups = append(groups, Group{ID: id, Trajectories: []Trajectory{
			{ID: id + "/t", Adapter: s.adapter, Step: s.step, Messages: []Message{{Role: "user", Content: "hi"}}}}})
	}
	path := writeTemp(t, "served.parquet", groups, WriterOptions{})
	ctx := context.Background()
	r, err := Open(ctx, fileset.Files(path))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	stats, err := ComputeStats(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range stats.ByAdapter {
		got = append(got, fmt.Sprintf("%s step %d", a.Adapter, a.Step))
	}
	want := []string{" step 4", "qwen3 step 1", "qwen3 step 5", "rl@2 step 2", "rl@3 step 3", "rl@10 step 0", "rl@10 step 10"}
	if !slices.Equal(got, want) {
		t.Errorf("by_adapter %q\nwant %q", got, want)
	}
}

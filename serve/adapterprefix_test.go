package serve

import (
	"context"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/waitfor"
)

// TestDroppedAdapterPrefixRowsFreed: the prefix cache keeps the rows of a
// finished request on an adapter step; once the registry drops that step
// (a newer one replaces it beyond --max-adapters) and nothing holds it,
// those rows are freed, while the base model's kept rows stay. Before,
// they stayed kept, unmatchable, until evicted for room.
func TestDroppedAdapterPrefixRowsFreed(t *testing.T) {
	dir := tinyDir(t)
	adir := t.TempDir()
	writeStep(t, dir, adir, "r1", 1)
	ts := startServer(t, Options{Model: dir, Adapters: adir, PollInterval: time.Hour, MaxAdapters: 1}, nil)
	ctx := context.Background()
	kept := func() int64 { return ts.s.Engine().Stats().PrefixKeptBytes }
	if _, err := ts.client.Chat.Completions.New(ctx, chatParams("tiny", 1, 4)); err != nil {
		t.Fatal(err)
	}
	base := kept()
	if base == 0 {
		t.Fatal("no rows kept for the base model's request: the test cannot tell rows apart")
	}
	if _, err := ts.client.Chat.Completions.New(ctx, chatParams("r1", 1, 4)); err != nil {
		t.Fatal(err)
	}
	if kept() <= base {
		t.Fatalf("kept %d bytes after a request on r1@1, no more than the base model's %d", kept(), base)
	}
	writeStep(t, dir, adir, "r1", 2)
	if n := ts.s.Registry().Poll(ctx); n != 1 {
		t.Fatalf("the poll loaded %d adapters, want 1 (step 2)", n)
	}
	if !waitfor.Within(10*time.Second, func() bool { return kept() == base }) {
		t.Fatalf("kept %d bytes after step 1 was dropped, want the base model's %d", kept(), base)
	}
}

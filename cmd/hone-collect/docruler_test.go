package main

import (
	"path/filepath"
	"testing"
)

// TestDocRulerTools: docs/ruler.md's way to try RULER on tool-using
// trajectories with the tiny model. The page said how the judge sees
// tools but not how to get trajectories that call any: the tiny model's
// chat template has no tool-call format, so as a policy it calls none.
// The block collects inbox episodes with the scripted random searcher
// (different attempts, each calling tools) and scores them with the tiny
// model as the judge on hone-serve, given more positions than its 4096,
// which a byte-level tokenizer fills with the instructions and tools
// alone: every row gets a ruler component.
func TestDocRulerTools(t *testing.T) {
	docBins(t)
	dir, path := docDir(t, "curl")
	blocks := docBlocks(t, "../../docs/ruler.md")
	if len(blocks) != 1 || blocks[0].output != nil {
		t.Fatalf("want one runnable block, the tools round; have %+v", blocks)
	}
	docSameTinyModel(t, blocks[0])
	docRunBlock(t, dir, path, docFreePorts(t, blocks[0], "8000"))
	trs := docRows(t, filepath.Join(dir, "out/inbox.parquet"))
	if len(trs) != 4 {
		t.Fatalf("%d collected rows, want 2 groups × 2", len(trs))
	}
	for _, tr := range trs {
		calls := 0
		for _, m := range tr.Messages {
			calls += len(m.ToolCalls)
		}
		if tr.Error != "" || tr.Env != "inbox" || len(tr.Tools) == 0 || calls == 0 {
			t.Errorf("%s: error %q, env %q, %d tools, %d tool calls", tr.ID, tr.Error, tr.Env, len(tr.Tools), calls)
		}
	}
	scored := docRows(t, filepath.Join(dir, "out/inbox-ruler.parquet"))
	if len(scored) != len(trs) {
		t.Fatalf("%d scored rows, want %d", len(scored), len(trs))
	}
	for _, tr := range scored {
		ruler := false
		for _, c := range tr.RewardComponents {
			ruler = ruler || c.Name == "ruler"
		}
		if tr.Error != "" || !ruler {
			t.Errorf("%s: error %q, components %+v: want a ruler score", tr.ID, tr.Error, tr.RewardComponents)
		}
	}
}

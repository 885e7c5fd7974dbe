package main

import (
	"strings"
	"testing"
)

// TestUsageNamesEveryEngineFlag: --help's --upstream paragraph lists the
// engine's own flags that --upstream refuses, so that an operator moving a
// command line behind vLLM learns from the help which flags to drop (or
// set on vllm serve) before a start fails on each in turn. Every flag of
// engineFlags is named there; the two prefix-caching spellings go as
// "prefix caching".
func TestUsageNamesEveryEngineFlag(t *testing.T) {
	start := strings.Index(usage, "The engine's own flags")
	end := strings.Index(usage, "are refused\nwith --upstream")
	if start < 0 || end < start {
		t.Fatalf("usage has no sentence listing the engine's own flags refused with --upstream:\n%s", usage)
	}
	list := strings.Join(strings.Fields(usage[start:end]), " ")
	for _, e := range engineFlags {
		name := "--" + e.flag
		if strings.HasSuffix(e.flag, "enable-prefix-caching") {
			name = "prefix caching"
		}
		if !strings.Contains(list+",", name+",") && !strings.Contains(list+")", name+")") {
			t.Errorf("--upstream refuses --%s, which the usage's list of engine flags does not name: %q", e.flag, list)
		}
	}
}

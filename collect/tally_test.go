package collect_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect"
)

// The failed run's "most often" names the error that failed most
// episodes even when each error names its own scenario: three scenarios
// whose secret is out of range fail alike, and outnumber the one with a
// bad payload, although no two of the four texts are equal.
func TestMostOftenLeavesScenarioOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	os.WriteFile(path, []byte(`{"id":"bad-json","payload":{"secret":"x"}}
{"id":"s1","payload":{"secret":99,"n":8}}
{"id":"s2","payload":{"secret":99,"n":8}}
{"id":"s10","payload":{"secret":99,"n":8}}
`), 0o644)
	var out bytes.Buffer
	o := collect.Options{Env: "guess", Scenarios: path, GroupSize: 1, Concurrency: 1, Policy: "scripted:bisect", Out: &out}
	err := collect.Run(context.Background(), o)
	if !errors.Is(err, collect.ErrAllFailed) {
		t.Fatalf("run: %v, want every episode failed", err)
	}
	want := "most often (3 of 4): start episode: guess: scenario <scenario>: secret 99 outside 1..8"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("run error %q\nwant it to say %q", err, want)
	}
}

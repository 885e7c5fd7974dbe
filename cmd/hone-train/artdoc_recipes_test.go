package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestARTDocRecipesCarryTheirSettings: each recipe command in
// docs/art.md's "Two recipes" parses as hone-train grpo flags and sets
// what the ART script it ports sets (ART v0.3.11, commit 779559f):
// examples/art-e/art_e/train.py (agent_008: 12 groups per step, learning
// rate 1.2e-5) and examples/2048/2048.py (1 group per step, learning rate
// 3e-5, and init_args max_seq_length=8192, which caps ART's packed row
// length; hone-train's --max-seq-len). The 2048 command lacked the
// 8192, so its rows could be longer than ART's and its updates fewer,
// while the page said everything else was ART's default.
func TestARTDocRecipesCarryTheirSettings(t *testing.T) {
	b, err := os.ReadFile("../../docs/art.md")
	if err != nil {
		t.Fatal(err)
	}
	recipes := map[string]map[string]string{
		"art-e": {"norm": "art", "groups-per-step": "12", "lr": "1.2e-05", "max-seq-len": "0"},
		"2048":  {"norm": "art", "groups-per-step": "1", "lr": "3e-05", "max-seq-len": "8192"},
	}
	seen := 0
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "bin/hone-train grpo ") {
			continue
		}
		root := newRootCmd(&bytes.Buffer{}, &bytes.Buffer{})
		args := strings.Fields(line)[1:] // after bin/hone-train
		grpo, rest, err := root.Find(args)
		if err != nil || grpo.Name() != "grpo" {
			t.Fatalf("%q: no grpo command (%v)", line, err)
		}
		if err := grpo.ParseFlags(rest); err != nil {
			t.Fatalf("%q does not parse: %v", line, err)
		}
		get := func(name string) string {
			f := grpo.Flags().Lookup(name)
			if f == nil {
				f = grpo.InheritedFlags().Lookup(name)
			}
			if f == nil {
				t.Fatalf("hone-train grpo has no --%s", name)
			}
			return f.Value.String()
		}
		want, ok := recipes[get("run")]
		if !ok {
			continue
		}
		seen++
		for name, v := range want {
			if got := get(name); got != v {
				t.Errorf("the %s recipe sets --%s %s; the ART script it ports means %s", get("run"), name, got, v)
			}
		}
	}
	if seen != len(recipes) {
		t.Errorf("found %d of the %d recipe commands", seen, len(recipes))
	}
}

package main

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestARTDocFlagsExist: every flag docs/art.md's "ART option → Hone flag"
// table names in its Hone and Notes columns is a flag of hone-train grpo
// (its own or inherited from hone-train), so the page cannot promise a
// flag that is not there, and each Hone default the Hone column states in
// parentheses after a flag ("`--lr` (5e-6)", "`--loss art` (default)") is
// that flag's default: a porter reads the column to know what they need
// not set. The table must also cover ART's options the port is judged by.
func TestARTDocFlagsExist(t *testing.T) {
	b, err := os.ReadFile("../../docs/art.md")
	if err != nil {
		t.Fatal(err)
	}
	root := newRootCmd(&bytes.Buffer{}, &bytes.Buffer{})
	grpo, _, err := root.Find([]string{"grpo"})
	if err != nil || grpo.Name() != "grpo" {
		t.Fatalf("no grpo command: %v", err)
	}
	exists := func(name string) bool {
		return grpo.Flags().Lookup(name) != nil || grpo.InheritedFlags().Lookup(name) != nil
	}
	flag := regexp.MustCompile(`--([a-z0-9][a-z0-9-]*)`)
	var table, artCol, notes []string
	inTable := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "| ART option | Hone |") {
			inTable = true
			continue
		}
		if inTable && !strings.HasPrefix(line, "|") {
			break
		}
		if !inTable || strings.HasPrefix(line, "| ---") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			t.Fatalf("table row with %d cells: %q", len(cells), line)
		}
		artCol = append(artCol, cells[1])
		table = append(table, cells[2])
		notes = append(notes, cells[3])
	}
	if len(table) < 30 {
		t.Fatalf("the ART option table has %d rows; want the full table", len(table))
	}
	n := 0
	for _, cell := range table {
		for _, m := range flag.FindAllStringSubmatch(cell, -1) {
			n++
			if !exists(m[1]) {
				t.Errorf("docs/art.md names --%s, which hone-train grpo does not have", m[1])
			}
		}
	}
	if n < 30 {
		t.Errorf("only %d flags in the table's Hone column", n)
	}
	for _, cell := range notes {
		for _, m := range flag.FindAllStringSubmatch(cell, -1) {
			if !exists(m[1]) {
				t.Errorf("docs/art.md's notes name --%s, which hone-train grpo does not have", m[1])
			}
		}
	}
	checked := 0
	for _, cell := range table {
		for _, d := range statedDefaults(cell) {
			f := grpo.Flags().Lookup(d[0])
			if f == nil {
				f = grpo.InheritedFlags().Lookup(d[0])
			}
			if f == nil {
				continue // reported above
			}
			checked++
			if !sameValue(d[1], f.DefValue) {
				t.Errorf("docs/art.md says --%s defaults to %q; hone-train grpo's default is %q", d[0], d[1], f.DefValue)
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d stated defaults were checked: the table's form changed", checked)
	}
	// The options issue #25 names are covered.
	art := strings.Join(artCol, " ")
	for _, opt := range []string{"importance_sampling_level", "advantage_balance", "num_trajectories_learning_rate_multiplier_power",
		"scale_learning_rate_by_reward_std_dev", "mask_prob_ratio", "kimi_k2_tau", "max_negative_advantage_importance_sampling_weight",
		"truncated_importance_sampling", "precalculate_logprobs", "packed_sequence_length", "learning_rate", "epsilon_high",
		"scale_rewards", "allow_training_without_logprobs", "logprob_calculation_chunk_size", "plot_tensors", "kl_penalty_coef"} {
		if !strings.Contains(art, "`"+opt+"`") {
			t.Errorf("docs/art.md's table has no row for ART's %s", opt)
		}
	}
}

package main

import (
	"bytes"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestTRLDocFlags: docs/trl.md's "GRPOConfig option → hone-train grpo
// flag" table and its TRL-like command name only flags hone-train grpo
// has, a Hone default the table states in parentheses right after a flag
// is that flag's default, and the table covers the GRPOConfig options a
// TRL user sets most.
func TestTRLDocFlags(t *testing.T) {
	b, err := os.ReadFile("../../docs/trl.md")
	if err != nil {
		t.Fatal(err)
	}
	root := newRootCmd(&bytes.Buffer{}, &bytes.Buffer{})
	grpo, _, err := root.Find([]string{"grpo"})
	if err != nil || grpo.Name() != "grpo" {
		t.Fatalf("no grpo command: %v", err)
	}
	lookup := func(name string) *pflag.Flag {
		if f := grpo.Flags().Lookup(name); f != nil {
			return f
		}
		return grpo.InheritedFlags().Lookup(name)
	}
	trlCol, honeCol := docTable(t, string(b), "| TRL option | Hone |")
	if len(honeCol) < 25 {
		t.Fatalf("the GRPOConfig table has %d rows; want the full table", len(honeCol))
	}
	flagRe := regexp.MustCompile("--([a-z0-9][a-z0-9-]*)")
	checked := 0
	for _, cell := range honeCol {
		for _, m := range flagRe.FindAllStringSubmatch(cell, -1) {
			if lookup(m[1]) == nil {
				t.Errorf("docs/trl.md's table names --%s, which hone-train grpo does not have", m[1])
			}
		}
		for _, m := range statedDefaults(cell) {
			f := lookup(m[0])
			if f == nil {
				continue
			}
			checked++
			if !sameValue(m[1], f.DefValue) {
				t.Errorf("docs/trl.md says --%s defaults to %q; hone-train grpo's default is %q", m[0], m[1], f.DefValue)
			}
		}
	}
	if checked < 8 {
		t.Errorf("only %d stated defaults were checked: the table's form changed", checked)
	}
	for _, m := range flagRe.FindAllStringSubmatch(shBlocks(string(b)), -1) {
		if lookup(m[1]) == nil {
			t.Errorf("docs/trl.md's command uses --%s, which hone-train grpo does not have", m[1])
		}
	}
	trl := strings.Join(trlCol, " ")
	for _, opt := range []string{"loss_type", "epsilon", "epsilon_high", "beta", "importance_sampling_level", "scale_rewards",
		"num_iterations", "vllm_importance_sampling_correction", "vllm_importance_sampling_mode", "mask_truncated_completions",
		"learning_rate", "lr_scheduler_type", "max_grad_norm", "weight_decay", "gradient_accumulation_steps", "delta",
		// TRL's main renamed vllm_importance_sampling_cap to _clip_max
		// (and added _clip_min); entropy_coef is a loss knob Hone lacks.
		"vllm_importance_sampling_clip_max", "vllm_importance_sampling_clip_min", "entropy_coef"} {
		if !strings.Contains(trl, "`"+opt+"`") && !strings.Contains(trl, "`"+opt+"=") {
			t.Errorf("docs/trl.md's table has no row for TRL's %s", opt)
		}
	}
}

// statedDefaults returns the (flag, value) pairs a table cell states as
// "`--flag` (value)" or "`--flag` (`value`)" or "`--flag` (value: words)",
// a list "`--a`, `--b` (1, 2)" (one value per flag), or "`--flag value`
// (default)", leaving out phrases such as "(0.2 with `--loss ppo`)" and
// "(same defaults)".
func statedDefaults(cell string) [][2]string {
	list := regexp.MustCompile("((?:`--[a-z0-9-]+`, )*`--[a-z0-9-]+`) \\(([^()]*)\\)")
	value := regexp.MustCompile("^`?([A-Za-z0-9_.+-]+)`?(?::.*)?$")
	name := regexp.MustCompile("`--([a-z0-9-]+)`")
	var out [][2]string
	for _, m := range list.FindAllStringSubmatch(cell, -1) {
		flags := name.FindAllStringSubmatch(m[1], -1)
		vals := []string{m[2]}
		if len(flags) > 1 {
			vals = strings.Split(m[2], ", ")
		}
		if len(vals) != len(flags) {
			continue
		}
		for i, f := range flags {
			if v := value.FindStringSubmatch(vals[i]); v != nil {
				out = append(out, [2]string{f[1], v[1]})
			}
		}
	}
	for _, m := range regexp.MustCompile("`--([a-z0-9-]+) ([A-Za-z0-9_.+-]+)` \\(default\\)").FindAllStringSubmatch(cell, -1) {
		out = append(out, [2]string{m[1], m[2]})
	}
	return out
}

// docTable returns the first two columns of the markdown table whose
// header line starts with header.
func docTable(t *testing.T, doc, header string) (first, second []string) {
	t.Helper()
	in := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, header) {
			in = true
			continue
		}
		if in && !strings.HasPrefix(line, "|") {
			break
		}
		if !in || strings.HasPrefix(line, "| ---") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			t.Fatalf("table row with %d cells: %q", len(cells), line)
		}
		first, second = append(first, cells[1]), append(second, cells[2])
	}
	if !in {
		t.Fatalf("no table headed %q", header)
	}
	return first, second
}

// shBlocks returns the lines of the page's ```sh blocks.
func shBlocks(doc string) string {
	var out []string
	in := false
	for _, line := range strings.Split(doc, "\n") {
		if info, ok := strings.CutPrefix(line, "```"); ok {
			in = !in && strings.HasPrefix(info, "sh")
			continue
		}
		if in {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// sameValue compares a stated default with a flag's, as numbers when both
// are numbers (5e-6 and 5e-06); the page says off and on for a boolean.
func sameValue(stated, def string) bool {
	if b, ok := map[string]string{"off": "false", "on": "true"}[stated]; ok {
		stated = b
	}
	a, errA := strconv.ParseFloat(stated, 64)
	b, errB := strconv.ParseFloat(def, 64)
	if errA == nil && errB == nil {
		return a == b
	}
	return stated == def
}

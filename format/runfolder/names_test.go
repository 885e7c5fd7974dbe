package runfolder

import (
	"strings"
	"testing"
)

func TestStepNameRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 7, 42, 999999, 1000000, 123456789012 / 10, 999999999999} {
		name := StepName(n)
		if n < 1000000 && len(name) != len("step-000000") {
			t.Errorf("StepName(%d) = %q, want 6 zero-padded digits", n, name)
		}
		if got, ok := ParseStepName(name); !ok || got != n {
			t.Errorf("ParseStepName(StepName(%d) = %q) = %d, %v", n, name, got, ok)
		}
	}
	if got := StepName(42); got != "step-000042" {
		t.Errorf("StepName(42) = %q", got)
	}
}

// TestParseStepName: what hone-serve has always taken as a step folder
// (step- and 1 to 12 digits, padded or not), and nothing else.
func TestParseStepName(t *testing.T) {
	for s, want := range map[string]int{"step-000042": 42, "step-7": 7, "step-0": 0, "step-000000": 0, "step-999999999999": 999999999999} {
		if n, ok := ParseStepName(s); !ok || n != want {
			t.Errorf("ParseStepName(%q) = %d, %v; want %d", s, n, ok, want)
		}
	}
	for _, s := range []string{"", "step-", "step-x", "step-1/..", "steps-1", "step--1", "step-+5", "step- 5", "step-5 ",
		"Step-1", "step-0x1", "step-1_000", "step-\u0663", "step-0000000000001", ".step-000001.tmp-12", "step-000001.tmp", "latest"} {
		if n, ok := ParseStepName(s); ok {
			t.Errorf("ParseStepName(%q) = %d, accepted", s, n)
		}
	}
}

func TestValidRun(t *testing.T) {
	for _, s := range []string{"run", "r-1.b_2", "A", "0", strings.Repeat("x", 128)} {
		if err := CheckRun(s); err != nil {
			t.Errorf("CheckRun(%q) = %v", s, err)
		}
	}
	for _, s := range []string{"", "..", "a/b", "../x", "a..b", ".hidden", "-x", "a b", "a@1", "a\\b", "é", strings.Repeat("x", 129)} {
		err := CheckRun(s)
		if err == nil || ValidRun(s) {
			t.Errorf("CheckRun(%q) accepted", s)
			continue
		}
		if !strings.Contains(err.Error(), "is not a run name") {
			t.Errorf("CheckRun(%q) = %v; want it to say why", s, err)
		}
	}
}

func TestServedRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		run  string
		step int
		want string
	}{{"exp", 0, "exp@0"}, {"exp", 42, "exp@42"}, {"r-1.b_2", 1000000, "r-1.b_2@1000000"}} {
		name := ServedName(tc.run, tc.step)
		if name != tc.want {
			t.Errorf("ServedName(%q, %d) = %q, want %q", tc.run, tc.step, name, tc.want)
		}
		s, err := ParseServed(name)
		if err != nil || s != (Served{Run: tc.run, Step: tc.step, HasStep: true}) || s.String() != name {
			t.Errorf("ParseServed(%q) = %+v, %v", name, s, err)
		}
		if n, ok := ServedStep(name); !ok || n != tc.step {
			t.Errorf("ServedStep(%q) = %d, %v", name, n, ok)
		}
	}
	s, err := ParseServed("exp")
	if err != nil || s != (Served{Run: "exp"}) || s.String() != "exp" {
		t.Errorf(`ParseServed("exp") = %+v, %v`, s, err)
	}
	if n, ok := ServedStep("exp"); ok {
		t.Errorf(`ServedStep("exp") = %d; "<run>" alone carries no step`, n)
	}
}

// TestParseServedStrict: the names hone-serve's registry refuses (its tests)
// and the ones hone-collect used to read a step from by mistake.
func TestParseServedStrict(t *testing.T) {
	for _, tc := range []struct {
		name, run, says string
	}{
		{"exp@05", "exp", "plain number"},
		{"exp@-1", "exp", "plain number"},
		{"exp@+1", "exp", "plain number"},
		{"exp@", "exp", "plain number"},
		{"exp@1.0", "exp", "plain number"},
		{"exp@ 1", "exp", "plain number"},
		{"exp@1@2", "exp", "plain number"},
		{"exp@6/..", "exp", "plain number"},
		{"exp@99999999999999999999", "exp", "plain number"},
		{"../exp", "../exp", "not a run name"},
		{"nope/x@3", "nope/x", "not a run name"},
		{"org/model@2024", "org/model", "not a run name"},
		{"@3", "", "not a run name"},
		{"", "", "not a run name"},
	} {
		s, err := ParseServed(tc.name)
		if err == nil {
			t.Errorf("ParseServed(%q) = %+v, accepted", tc.name, s)
			continue
		}
		if s.Run != tc.run || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("ParseServed(%q) = %+v, %v; want run %q and an error naming the model and saying %q", tc.name, s, err, tc.run, tc.says)
		}
		if n, ok := ServedStep(tc.name); ok {
			t.Errorf("ServedStep(%q) = %d, accepted", tc.name, n)
		}
	}
	if n, ok := ServedStep("qwen3-0.6b"); ok {
		t.Errorf("ServedStep of a base model's name = %d", n)
	}
}

package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCosineWarmupPastHorizonWarns runs hone-train grpo as a process with
// --lr-schedule cosine and a warm-up that takes the whole horizon (the
// step the call trains to, or --schedule-steps): the run trains, and one
// warning names --warmup-steps and the horizon, with both numbers, since
// the learning rate never decays (nor does it when the warm-up ends on
// the horizon's last step, which is at the top of the cosine). Before, it trained at the peak rate to
// the end without a word. A warm-up that leaves steps to decay is not
// warned about.
func TestCosineWarmupPastHorizonWarns(t *testing.T) {
	runCosine := cosineRunner(t)
	for i, tc := range []struct {
		extra []string
		want  []string // in the one warning; none: no warning
	}{
		{[]string{"--steps", "3", "--warmup-steps", "3"}, []string{"--warmup-steps 3", "3 steps", "this call trains to"}},
		{[]string{"--steps", "3", "--warmup-steps", "5"}, []string{"--warmup-steps 5", "3 steps"}},
		{[]string{"--steps", "1", "--warmup-steps", "4", "--schedule-steps", "4"}, []string{"--warmup-steps 4", "--schedule-steps 4"}},
		// The last step (0-based 2) is the first after the warm-up: at
		// the top of the cosine, no lower.
		{[]string{"--steps", "3", "--warmup-steps", "2"}, []string{"--warmup-steps 2", "3 steps"}},
		{[]string{"--steps", "3", "--warmup-steps", "1"}, nil},
	} {
		text := runCosine(i, tc.extra)
		checkOneWarning(t, tc.extra, warnLines(text, "never decays"), tc.want, "the learning rate never decays", text)
	}
}

// TestCosinePastScheduleStepsWarns runs hone-train grpo as a process with
// --lr-schedule cosine and a --schedule-steps horizon that the call trains
// past (steps, or with --norm art optimizer updates, one per packed row,
// which a user counting steps undercounts): the updates past it train at
// --min-lr, by default 0, so they change nothing. The run trained them
// and exited 0 without a word; now one warning names the first step past
// the horizon, --schedule-steps and --min-lr. A horizon the call does not
// pass, or the default one, is not warned about.
func TestCosinePastScheduleStepsWarns(t *testing.T) {
	runCosine := cosineRunner(t)
	for i, tc := range []struct {
		extra []string
		want  []string // in the one warning; none: no warning
	}{
		{[]string{"--steps", "3", "--schedule-steps", "2"}, []string{"step 3", "--schedule-steps 2", "--min-lr 0"}},
		{[]string{"--steps", "3", "--schedule-steps", "1", "--norm", "art", "--min-lr", "1e-6"}, []string{"update 2", "--schedule-steps 1", "--min-lr 1e-06"}},
		{[]string{"--steps", "2", "--schedule-steps", "2"}, nil},
		{[]string{"--steps", "3"}, nil},
		{[]string{"--steps", "3", "--norm", "art"}, nil},
	} {
		text := runCosine(i, tc.extra)
		checkOneWarning(t, tc.extra, warnLines(text, "horizon"), tc.want, "the run is past the horizon", text)
	}
}

// TestCosinePastHorizonWarnsOnlyAtMinLR: a --warmup-steps that reaches the
// --schedule-steps horizon leaves the cosine no span to decay over, and
// Schedule.At keeps --lr past the warm-up, past the horizon too (the
// never-decays warning says so). The past-horizon warning still fired
// there, saying the rest of the call trains at --min-lr, which it does
// not: two warnings that contradict each other. A warm-up that leaves a
// span is still warned about past the horizon.
func TestCosinePastHorizonWarnsOnlyAtMinLR(t *testing.T) {
	runCosine := cosineRunner(t)
	for i, tc := range []struct {
		extra []string
		warns bool
	}{
		{[]string{"--steps", "4", "--warmup-steps", "3", "--schedule-steps", "2"}, false},
		{[]string{"--steps", "4", "--warmup-steps", "2", "--schedule-steps", "2"}, false},
		{[]string{"--steps", "4", "--warmup-steps", "1", "--schedule-steps", "2"}, true},
	} {
		text := runCosine(i, tc.extra)
		want := 0
		if tc.warns {
			want = 1
		}
		if w := warnLines(text, "past the horizon"); len(w) != want {
			t.Errorf("%v: past-horizon warnings %q, want %d", tc.extra, w, want)
		}
	}
}

// cosineRunner makes a scored fixture and returns a func that runs
// hone-train grpo as a process with --lr-schedule cosine and the flags
// extra on it, in run folder number i of the test's table, and returns
// its output, failing the test on a non-zero exit.
func cosineRunner(t *testing.T) func(i int, extra []string) string {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	in := filepath.Join(dir, "s", "a.parquet")
	return func(i int, extra []string) string {
		t.Helper()
		args := append([]string{"grpo", "--model", md, "--run", "r" + string(rune('a'+i)), "--out", filepath.Join(dir, "adapters"),
			"--rank", "2", "--threads", "1", "--groups-per-step", "1", "--lr-schedule", "cosine"}, extra...)
		code, text := runMain(t, append(args, in)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", extra, code, text)
		}
		return text
	}
}

// checkOneWarning checks the warnings w of the call with the flags extra:
// none when want is nil, else one that says each of want (about says what
// that one warning is about, for the message).
func checkOneWarning(t *testing.T, extra, w, want []string, about, text string) {
	t.Helper()
	if want == nil {
		if len(w) != 0 {
			t.Errorf("%v: warned %q, want no warning", extra, w)
		}
		return
	}
	if len(w) != 1 {
		t.Errorf("%v: warnings %q, want one that %s\n%s", extra, w, about, text)
		return
	}
	for _, s := range want {
		if !strings.Contains(w[0], s) {
			t.Errorf("%v: warning %q does not say %q", extra, w[0], s)
		}
	}
}

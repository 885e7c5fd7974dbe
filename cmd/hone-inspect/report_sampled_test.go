package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A run with more steps than the page shows rollouts of says that it
// shows some of them, and which share: the step picker used to list 50 of
// 120 steps with nothing telling the reader that the others exist.
func TestReportSaysItSampledRolloutSteps(t *testing.T) {
	run, traj := writeLongRun(t, 120, "", "")
	out := filepath.Join(t.TempDir(), "r.html")
	mustRun(t, nil, "report", run, "--trajectories", traj, "-o", out)
	page, _ := readPage(t, out)
	if n := strings.Count(page, `<div class="rollout" data-i=`); n != 50 {
		t.Fatalf("%d rollouts on the page, want 50", n)
	}
	if !strings.Contains(page, "50 of its 120 steps, evenly spaced") {
		t.Errorf("the rollouts do not say that 70 steps are left out:\n%s", page[strings.Index(page, `<section id="rollouts">`):][:600])
	}
}

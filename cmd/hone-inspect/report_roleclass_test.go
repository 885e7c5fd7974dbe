package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// A message's role is a CSS class of its box, kept to one class: the role
// "user omitted" used to give the box the page's own "omitted" class too,
// styling a user's turn as the note of messages left out.
func TestReportRoleIsOneClass(t *testing.T) {
	run, traj := writeLongRun(t, 1, "", "")
	groups, err := trajectory.ReadFile(context.Background(), traj)
	if err != nil {
		t.Fatal(err)
	}
	for i := range groups[0].Trajectories {
		groups[0].Trajectories[i].Messages[0].Role = "user omitted"
	}
	if err := trajectory.WriteFile(context.Background(), traj, groups, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "r.html")
	mustRun(t, nil, "report", run, "--trajectories", traj, "-o", out)
	page, _ := readPage(t, out)
	if strings.Contains(page, `role-user omitted"`) || !strings.Contains(page, `<div class="msg role-user_omitted"><div class="role">user omitted</div>`) {
		t.Errorf("the role's box is not of one class role-user_omitted")
	}
}

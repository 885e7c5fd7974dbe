package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/score/judge/judgetest"
)

// TestIdenticalGroupsNamedInInputOrder: the run's warning about groups of
// identical trajectories names the first three group ids, and named them
// in the order the judge answered, so under --concurrency the same input
// gave a different line from run to run. Here the judge holds g0's answer
// until g3 is asked, which --concurrency 2 asks only once g1 and g2 are
// answered: the warning still names g0,g1,g2, the input's order.
func TestIdenticalGroupsNamedInInputOrder(t *testing.T) {
	dir := t.TempDir()
	var gs []trajectory.Group
	for g := range 4 {
		id := fmt.Sprintf("g%d", g)
		grp := trajectory.Group{ID: id}
		for i := range 2 {
			grp.Trajectories = append(grp.Trajectories, trajectory.Trajectory{
				ID: fmt.Sprintf("%s-%d", id, i), GroupID: id, Env: "guess", Reward: trajectory.Float64(0),
				Messages: []trajectory.Message{
					{Role: "user", Content: "Scenario " + id},
					{Role: "assistant", Content: "I guess 42. WIN", Trainable: true},
				},
			})
		}
		gs = append(gs, grp)
	}
	in := filepath.Join(dir, "in.parquet")
	if err := trajectory.WriteFile(context.Background(), in, gs, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	keyword := judgetest.KeywordJudge("WIN")
	srv := judgetest.NewServer(t, func(n int, req judgetest.Request) judgetest.Reply {
		switch {
		case strings.Contains(req.User(), "Scenario g0"):
			<-release
		case strings.Contains(req.User(), "Scenario g3"):
			open()
		}
		return keyword(n, req)
	})
	t.Cleanup(open) // before the server closes, should g3 never be asked
	r := runBin(t, nil, nil, "-o", filepath.Join(dir, "out.parquet"), "--scorer", "ruler", "--judge-model", "m",
		"--judge-base-url", srv.BaseURL(), "--no-judge-cache", "--concurrency", "2", in)
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "groups=4 first=g0,g1,g2") {
		t.Errorf("the warning does not name g0,g1,g2, the input's first identical groups:\n%s", r.stderr)
	}
}

package scoretest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/trajectory"
)

// TestSnapshotSeesInPlaceChanges: the suite's "leaves g unmodified" check
// sees a change a scorer makes in place through a map or slice the group
// shares with its copy (a trajectory's metadata or tools, the group's own
// metadata), and holds for a group that has group metadata and metrics;
// the copy it compared before missed the first and failed the second.
func TestSnapshotSeesInPlaceChanges(t *testing.T) {
	before := snapshot(t, sampleGroup())
	for range 20 { // maps in key order: the same bytes every time
		if !bytes.Equal(before, snapshot(t, sampleGroup())) {
			t.Fatal("two snapshots of one group differ")
		}
	}
	for name, change := range map[string]func(*trajectory.Group){
		"trajectory metadata": func(g *trajectory.Group) { g.Trajectories[1].Metadata["b"] = "changed" },
		"tools":               func(g *trajectory.Group) { g.Trajectories[0].Tools[0].Name = "g" },
		"group metadata":      func(g *trajectory.Group) { g.Metadata["round"] = "2" },
		"group metrics":       func(g *trajectory.Group) { g.Metrics["spread"] = 1 },
	} {
		g := sampleGroup()
		change(&g)
		if bytes.Equal(before, snapshot(t, g)) {
			t.Errorf("a change of the %s is not seen", name)
		}
	}
}

// sampleGroup is a group with every kind of map and slice a scorer could
// change in place.
func sampleGroup() trajectory.Group {
	g := trajectory.Group{ID: "g", Metadata: map[string]string{"round": "1"}, Metrics: map[string]float64{"spread": 0.5}}
	for i := range 3 {
		g.Trajectories = append(g.Trajectories, trajectory.Trajectory{
			Run: "r", ScenarioID: "s", GroupID: "g", ID: fmt.Sprintf("t%d", i), Env: "guess",
			Messages:  []trajectory.Message{{Role: "user", Content: "go"}, {Role: "assistant", Content: "ok"}},
			Tools:     []trajectory.Tool{{Type: "function", Name: "f", Parameters: `{"type":"object"}`}},
			Metadata:  map[string]string{"a": "1", "b": "2", "c": "3", "d": "4"},
			Metrics:   map[string]float64{"x": 1, "y": 2, "z": 3},
			Reward:    trajectory.Float64(float64(i)),
			CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		})
	}
	return g
}

package ruler_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/score/judge"
	"github.com/hone-rl/hone/score/judge/judgetest"
	"github.com/hone-rl/hone/score/ruler"
)

var moveTool = trajectory.Tool{Name: "move", Description: "Play a cell (1-9).", Parameters: `{"type":"object","properties":{"cell":{"type":"integer"}}}`}

// Written by hand: the tool in OpenAI's tools shape.
const moveToolJSON = `[{"type":"function","function":{"name":"move","description":"Play a cell (1-9).","parameters":{"type":"object","properties":{"cell":{"type":"integer"}}}}}]`

// The tools the agent had are shown once, ahead of everything else, when
// all trajectories had the same ones.
func TestBuildSharedTools(t *testing.T) {
	a := game("a", `{"cell":5}`, "ok <center>", "I win & done")
	b := game("b", `{"cell":10}`, "illegal move", "oops")
	a.Tools, b.Tools = []trajectory.Tool{moveTool}, []trajectory.Tool{moveTool}
	p := ruler.Build([]trajectory.Trajectory{a, b}, "")
	want := "The agent could call these tools:\n<available_tools>\n" + moveToolJSON + "\n</available_tools>\n\n" + wantUser
	if p.User != want {
		t.Fatalf("user prompt differs.\n--- got ---\n%s\n--- want ---\n%s", p.User, want)
	}
	if !strings.Contains(p.System, "<available_tools>") {
		t.Fatalf("system prompt does not say where the tools are:\n%s", p.System)
	}
	// No tools: no block.
	if p := ruler.Build([]trajectory.Trajectory{game("a", "{}", "ok", "x"), game("b", "{}", "ok", "y")}, ""); strings.Contains(p.User, "<available_tools>") {
		t.Fatalf("tools block without tools:\n%s", p.User)
	}
}

// Trajectories offered different tools each show their own list, at the
// head of their block; one offered none shows [].
func TestBuildToolsPerTrajectory(t *testing.T) {
	a := game("a", `{"cell":5}`, "ok", "I win")
	b := game("b", `{"cell":5}`, "ok", "I win")
	a.Tools = []trajectory.Tool{moveTool}
	p := ruler.Build([]trajectory.Trajectory{a, b}, "")
	if p.Identical || strings.Count(p.User, "<available_tools>") != 2 {
		t.Fatalf("same messages, different tools must be compared, each with its tools:\n%s", p.User)
	}
	_, blocks := judgetest.Blocks(p.User)
	if !strings.HasPrefix(blocks["1"], "<available_tools>\n"+moveToolJSON+"\n</available_tools>\n[") ||
		!strings.HasPrefix(blocks["2"], "<available_tools>\n[]\n</available_tools>\n[") {
		t.Fatalf("blocks = %q", blocks)
	}
}

// A group of one is shown whole and scored on an absolute scale, with
// one judge call.
func TestGroupOfOne(t *testing.T) {
	a := game("a", `{"cell":5}`, "ok", "I win")
	a.Tools = []trajectory.Tool{moveTool}
	p := ruler.Build([]trajectory.Trajectory{a}, "")
	if !p.Absolute || p.Identical || p.SharedPrefix != 0 || strings.Join(p.IDs, ",") != "1" {
		t.Fatalf("prompt meta = %+v", p)
	}
	if !strings.Contains(p.System, "absolute scale") || strings.Contains(p.System, "Compare the attempts") ||
		!strings.Contains(p.System, `{"scores": {"1": {"explanation": "...", "score": 0.0}}}`) || !strings.HasSuffix(p.System, ruler.DefaultRubric) {
		t.Fatalf("system prompt:\n%s", p.System)
	}
	if !strings.HasPrefix(p.User, "The agent could call these tools:\n<available_tools>\n"+moveToolJSON+"\n</available_tools>\n\nTrajectory:\n\n<trajectory id=\"1\">\n[{\"role\":\"system\",\"content\":\"You play tic-tac-toe as X. Win.\"},") ||
		!strings.HasSuffix(p.User, `{"role":"assistant","content":"I win"}]`+"\n</trajectory>") {
		t.Fatalf("user prompt:\n%s", p.User)
	}
	var seen []judge.Request
	f := &judge.Fake{Answer: func(_ int, r judge.Request) (string, error) {
		seen = append(seen, r)
		return judgetest.Answer(r.IDs, []float64{0.6}), nil
	}}
	s := &ruler.Scorer{Component: "ruler", Judge: f, Model: "m"}
	comps, err := s.ScoreGroup(context.Background(), &trajectory.Group{ID: "solo", Trajectories: []trajectory.Trajectory{a}})
	if err != nil || len(comps) != 1 || comps[0].Value != 0.6 || comps[0].Explanation == "" {
		t.Fatalf("comps %+v, err %v", comps, err)
	}
	if len(seen) != 1 || seen[0].PromptVersion != ruler.PromptVersion || seen[0].System != p.System {
		t.Fatalf("judge requests %+v", seen)
	}
}

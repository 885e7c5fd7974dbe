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

// summary is an additional history: a summariser's conversation, offered
// the note tool, with no token data shown.
func summary(text string) trajectory.History {
	return trajectory.History{
		Messages: []trajectory.Message{
			{Role: "system", Content: "Summarise the game."},
			{Role: "assistant", Trainable: true, TokenIDs: []int32{1, 2}, Logprobs: []float32{-1, -2}, Content: text},
		},
		Tools: []trajectory.Tool{{Name: "note", Parameters: `{"type":"object"}`}},
	}
}

// Written by hand: trajectory 2's block is wantUser's, then its two
// additional histories in order, the first with its own tools.
const wantHistoryBlock = `[{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"move","arguments":"{\"cell\":10}"}}]},{"role":"tool","content":"illegal move","tool_call_id":"c1"},{"role":"assistant","content":"oops"}]
<additional_history index="1">
<available_tools>
[{"type":"function","function":{"name":"note","parameters":{"type":"object"}}}]
</available_tools>
[{"role":"system","content":"Summarise the game."},{"role":"assistant","content":"X lost on an illegal move"}]
</additional_history>
<additional_history index="2">
[{"role":"user","content":"check the rules"},{"role":"assistant","content":"cell 10 does not exist"}]
</additional_history>`

// TestBuildShowsEveryHistory checks that every history of a trajectory is
// shown to the judge, in its own block after the main messages, with its
// own tools, and that the system message says what the blocks are.
func TestBuildShowsEveryHistory(t *testing.T) {
	a := game("a", `{"cell":5}`, "ok <center>", "I win & done")
	b := game("b", `{"cell":10}`, "illegal move", "oops")
	b.AdditionalHistories = []trajectory.History{
		summary("X lost on an illegal move"),
		{Messages: []trajectory.Message{{Role: "user", Content: "check the rules"}, {Role: "assistant", Content: "cell 10 does not exist"}}},
	}
	p := ruler.Build([]trajectory.Trajectory{a, b}, "")
	want := strings.Replace(wantUser, `{"role":"assistant","content":"oops"}]`, `{"role":"assistant","content":"oops"}]`+strings.TrimPrefix(wantHistoryBlock, `[{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"move","arguments":"{\"cell\":10}"}}]},{"role":"tool","content":"illegal move","tool_call_id":"c1"},{"role":"assistant","content":"oops"}]`), 1)
	if p.User != want {
		t.Fatalf("user prompt differs.\n--- got ---\n%s\n--- want ---\n%s", p.User, want)
	}
	ids, blocks := judgetest.Blocks(p.User)
	if strings.Join(ids, ",") != "1,2" || blocks["2"] != wantHistoryBlock || strings.Contains(blocks["1"], "additional_history") {
		t.Fatalf("blocks = %q", blocks)
	}
	if !strings.Contains(p.System, "<additional_history>") || !strings.Contains(p.System, "Judge each attempt on all of its histories together.") {
		t.Fatalf("system prompt does not explain the histories:\n%s", p.System)
	}
	// Without histories the prompt is what it was: no note.
	if p := ruler.Build([]trajectory.Trajectory{a, game("b", `{"cell":10}`, "illegal move", "oops")}, ""); strings.Contains(p.System, "additional_history") || p.User != wantUser {
		t.Fatalf("a prompt without histories changed:\n%s", p.System)
	}
}

// Trajectories that differ only in an additional history are compared,
// not merged as identical; equal histories keep an identical group one
// attempt, shown with its histories.
func TestHistoriesDecideIdentical(t *testing.T) {
	a := game("a", `{"cell":5}`, "ok", "I win")
	b := game("b", `{"cell":5}`, "ok", "I win")
	a.AdditionalHistories = []trajectory.History{summary("X won")}
	b.AdditionalHistories = []trajectory.History{summary("X won quickly")}
	p := ruler.Build([]trajectory.Trajectory{a, b}, "")
	if p.Identical || p.Absolute || len(p.IDs) != 2 {
		t.Fatalf("different histories merged: %+v", p)
	}
	_, blocks := judgetest.Blocks(p.User)
	if !strings.Contains(blocks["1"], `"X won"`) || !strings.Contains(blocks["2"], `"X won quickly"`) {
		t.Fatalf("blocks = %q", blocks)
	}
	b.AdditionalHistories = []trajectory.History{summary("X won")}
	p = ruler.Build([]trajectory.Trajectory{a, b}, "")
	if !p.Identical || !p.Absolute || !strings.Contains(p.User, `<additional_history index="1">`) || !strings.Contains(p.System, "additional histories") {
		t.Fatalf("identical group with histories: %+v\n%s", p, p.User)
	}
}

// A long text inside an additional history is cut to the budget like any
// other, with its marker.
func TestBuildWithinCutsHistories(t *testing.T) {
	a := game("a", `{"cell":5}`, "ok", "I win")
	b := game("b", `{"cell":10}`, "illegal move", "oops")
	long := "START " + strings.Repeat("0123456789", 400) + " END"
	b.AdditionalHistories = []trajectory.History{summary(long)}
	whole := ruler.Build([]trajectory.Trajectory{a, b}, "")
	est := ruler.Estimate{}
	full := est.Count(whole.System) + est.Count(whole.User)
	budget := full - 800
	p, err := ruler.BuildWithin([]trajectory.Trajectory{a, b}, "", ruler.Budget{Tokens: budget})
	if err != nil {
		t.Fatal(err)
	}
	if p.Cuts != 1 || p.Tokens > budget || strings.Contains(p.User, long) {
		t.Fatalf("cuts %d, tokens %d (budget %d); the history's text not cut", p.Cuts, p.Tokens, budget)
	}
	_, blocks := judgetest.Blocks(p.User)
	h := blocks["2"][strings.Index(blocks["2"], "<additional_history"):]
	if m := markerRE.FindStringSubmatch(h); m == nil || !strings.Contains(h, `"content":"START 0123`) || !strings.Contains(h, `789 END"`) {
		t.Fatalf("history not cut around a marker:\n%s", h)
	}
}

// Scoring a group with multi-history trajectories works end to end (ART's
// RULER raises on them): the judge's request carries every history.
func TestScoreGroupWithHistories(t *testing.T) {
	a := game("a", `{"cell":5}`, "ok", "I win")
	b := game("b", `{"cell":10}`, "illegal move", "oops")
	a.AdditionalHistories = []trajectory.History{summary("X won")}
	var seen []judge.Request
	f := &judge.Fake{Answer: func(_ int, r judge.Request) (string, error) {
		seen = append(seen, r)
		return judgetest.Answer(r.IDs, []float64{0.9, 0.1}), nil
	}}
	s := &ruler.Scorer{Component: "ruler", Judge: f, Model: "m"}
	comps, err := s.ScoreGroup(context.Background(), &trajectory.Group{ID: "g1", Trajectories: []trajectory.Trajectory{a, b}})
	if err != nil || len(comps) != 2 || comps[0].Value != 0.9 || comps[1].Value != 0.1 {
		t.Fatalf("comps %+v, err %v", comps, err)
	}
	if len(seen) != 1 || !strings.Contains(seen[0].User, `"content":"X won"`) || !strings.Contains(seen[0].System, "additional histories") {
		t.Fatalf("judge requests %+v", seen)
	}
}

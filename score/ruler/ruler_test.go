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

// game returns a tic-tac-toe-like episode: a shared system and user turn,
// then an assistant tool call, its result, and a final answer.
func game(id, move, result, final string) trajectory.Trajectory {
	return trajectory.Trajectory{ID: id, GroupID: "g1", Messages: []trajectory.Message{
		{Role: "system", Content: "You play tic-tac-toe as X. Win."},
		{Role: "user", Content: "Board: . . . / . . . / . . ."},
		{Role: "assistant", Trainable: true, TokenIDs: []int32{11, 12, 13}, Logprobs: []float32{-0.5, -0.25, -1},
			FinishReason: "tool_calls", ToolCalls: []trajectory.ToolCall{{ID: "c1", Type: "function", Name: "move", Arguments: move}}},
		{Role: "tool", ToolCallID: "c1", Content: result},
		{Role: "assistant", Trainable: true, TokenIDs: []int32{14}, Logprobs: []float32{-0.1}, Content: final},
	}}
}

// The expected prompt is written out by hand from the layout described in
// the package doc, not produced by the code under test.
const wantUser = `All trajectories begin with these messages:
<shared_context>
[{"role":"system","content":"You play tic-tac-toe as X. Win."},{"role":"user","content":"Board: . . . / . . . / . . ."}]
</shared_context>

Each trajectory continues as follows.

Trajectories:

<trajectory id="1">
[{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"move","arguments":"{\"cell\":5}"}}]},{"role":"tool","content":"ok <center>","tool_call_id":"c1"},{"role":"assistant","content":"I win & done"}]
</trajectory>

<trajectory id="2">
[{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"move","arguments":"{\"cell\":10}"}}]},{"role":"tool","content":"illegal move","tool_call_id":"c1"},{"role":"assistant","content":"oops"}]
</trajectory>`

func TestBuildGolden(t *testing.T) {
	trajs := []trajectory.Trajectory{
		game("a", `{"cell":5}`, "ok <center>", "I win & done"),
		game("b", `{"cell":10}`, "illegal move", "oops"),
	}
	p := ruler.Build(trajs, "")
	if p.User != wantUser {
		t.Fatalf("user prompt differs.\n--- got ---\n%s\n--- want ---\n%s", p.User, wantUser)
	}
	if p.SharedPrefix != 2 || p.Identical || strings.Join(p.IDs, ",") != "1,2" {
		t.Fatalf("prompt meta = %+v", p)
	}
	if !strings.Contains(p.System, ruler.DefaultRubric) || !strings.Contains(p.System, `{"scores": {"1": {"explanation": "...", "score": 0.0}`) {
		t.Fatalf("system prompt lacks the rubric or the answer shape:\n%s", p.System)
	}
	for _, leak := range []string{"token", "logprob", "-0.5", "finish", "trainable"} {
		if strings.Contains(p.User, leak) {
			t.Errorf("user prompt shows %q to the judge", leak)
		}
	}
	custom := ruler.Build(trajs, "Only legal moves count.\n")
	if !strings.HasSuffix(custom.System, "Rubric:\nOnly legal moves count.") || strings.Contains(custom.System, ruler.DefaultRubric) {
		t.Fatalf("custom rubric not used:\n%s", custom.System)
	}
}

func TestBuildPrefixSharing(t *testing.T) {
	a := game("a", `{"cell":5}`, "ok", "done")
	b := game("b", `{"cell":5}`, "ok", "done")
	b.Messages[4].Content = "done!"
	c := game("c", `{"cell":5}`, "ok", "done")
	c.Messages = c.Messages[:4] // ends after the tool result
	p := ruler.Build([]trajectory.Trajectory{a, b, c}, "")
	if p.SharedPrefix != 4 {
		t.Fatalf("shared prefix = %d, want 4", p.SharedPrefix)
	}
	if n := strings.Count(p.User, "tic-tac-toe"); n != 1 {
		t.Fatalf("system prompt shown %d times, want once", n)
	}
	ids, blocks := judgetest.Blocks(p.User)
	if strings.Join(ids, ",") != "1,2,3" || blocks["3"] != "[]" || !strings.Contains(blocks["2"], `"done!"`) {
		t.Fatalf("blocks = %q", blocks)
	}
	// No shared prefix: no context section.
	d := game("d", "{}", "ok", "x")
	d.Messages[0].Content = "another system prompt"
	if p := ruler.Build([]trajectory.Trajectory{a, d}, ""); p.SharedPrefix != 0 || strings.Contains(p.User, "shared_context") {
		t.Fatalf("unexpected shared context:\n%s", p.User)
	}
}

func TestBuildIdentical(t *testing.T) {
	a, b := game("a", "{}", "ok", "x"), game("b", "{}", "ok", "x")
	p := ruler.Build([]trajectory.Trajectory{a, b}, "")
	if !p.Identical || !p.Absolute || strings.Join(p.IDs, ",") != "1" || strings.Contains(p.User, "shared_context") || !strings.Contains(p.User, "tic-tac-toe") ||
		!strings.Contains(p.System, "absolute scale") {
		t.Fatalf("identical group prompt = %+v", p)
	}
	f := &judge.Fake{Answer: func(_ int, r judge.Request) (string, error) {
		return judgetest.Answer(r.IDs, []float64{0.7}), nil
	}}
	s := &ruler.Scorer{Component: "ruler", Judge: f, Model: "m"}
	comps, err := s.ScoreGroup(context.Background(), &trajectory.Group{ID: "g1", Trajectories: []trajectory.Trajectory{a, b}})
	if err != nil || len(comps) != 2 || comps[0].Value != 0.7 || comps[1].Value != 0.7 {
		t.Fatalf("comps %+v, err %v", comps, err)
	}
}

func TestScorer(t *testing.T) {
	trajs := []trajectory.Trajectory{
		game("a", `{"cell":5}`, "ok", "I win"),
		game("b", `{"cell":10}`, "illegal move", "oops"),
		game("c", `{"cell":1}`, "ok", "draw"),
	}
	srv := judgetest.NewServer(t, judgetest.KeywordJudge("win"))
	s := &ruler.Scorer{Component: "ruler", Model: "judge-m",
		Judge: judge.NewOpenAI(judge.OpenAIOptions{BaseURL: srv.BaseURL()})}
	comps, err := s.ScoreGroup(context.Background(), &trajectory.Group{ID: "g1", Trajectories: trajs})
	if err != nil {
		t.Fatal(err)
	}
	if comps[0].Value != 1 || comps[1].Value != 0.25 || comps[2].Value != 0.25 || comps[0].Name != "ruler" || comps[0].Explanation == "" {
		t.Fatalf("comps = %+v", comps)
	}
	if srv.Hits() != 1 {
		t.Fatalf("judge calls = %d, want 1 per group", srv.Hits())
	}
}

package ruler_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hone-rl/hone/format/tokenizer"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/score/judge"
	"github.com/hone-rl/hone/score/judge/judgetest"
	"github.com/hone-rl/hone/score/ruler"
)

var markerRE = regexp.MustCompile(`\[… (\d+) of (\d+) tokens cut to fit the judge's context …\]`)

// longGroup: trajectory 1's tool result is 3000 ASCII bytes (1000
// estimated tokens) and its final answer 600 bytes; trajectory 2 is short.
func longGroup() ([]trajectory.Trajectory, string, string) {
	result := strings.Repeat("0123456789", 300)
	final := "WIN " + strings.Repeat("abcdef", 100)
	return []trajectory.Trajectory{
		game("a", `{"cell":5}`, result, final),
		game("b", `{"cell":10}`, "illegal move", "oops"),
	}, result, final
}

// toolResult returns the content of trajectory id's tool message.
func toolResult(t *testing.T, p ruler.Prompt, id string) string {
	t.Helper()
	_, blocks := judgetest.Blocks(p.User)
	re := regexp.MustCompile(`"role":"tool","content":"([^"]*)"`)
	m := re.FindStringSubmatch(blocks[id])
	if m == nil {
		t.Fatalf("no tool result in block %s: %s", id, blocks[id])
	}
	return m[1]
}

func TestBuildWithinFits(t *testing.T) {
	trajs, _, _ := longGroup()
	whole := ruler.Build(trajs, "")
	est := ruler.Estimate{}
	full := est.Count(whole.System) + est.Count(whole.User)
	p, err := ruler.BuildWithin(trajs, "", ruler.Budget{Tokens: full})
	if err != nil || p.User != whole.User || p.System != whole.System || p.Cuts != 0 || p.Tokens != full {
		t.Fatalf("a prompt within budget changed: cuts %d, tokens %d (want %d), err %v", p.Cuts, p.Tokens, full, err)
	}
	if p, err := ruler.BuildWithin(trajs, "", ruler.Budget{}); err != nil || p.User != whole.User || p.Tokens != 0 {
		t.Fatalf("no budget: %+v, %v", p, err)
	}
}

// Over budget, the tool result is cut first, and only as much as needed:
// its start and end kept around a marker that counts what went.
func TestBuildWithinCutsToolResults(t *testing.T) {
	trajs, result, final := longGroup()
	whole := ruler.Build(trajs, "")
	est := ruler.Estimate{}
	full := est.Count(whole.System) + est.Count(whole.User)
	budget := full - 500
	p, err := ruler.BuildWithin(trajs, "", ruler.Budget{Tokens: budget})
	if err != nil {
		t.Fatal(err)
	}
	if got := est.Count(p.System) + est.Count(p.User); p.Tokens != got || got > budget || got < budget-5 {
		t.Fatalf("tokens %d (counted %d), budget %d: want at most the budget and close to it", p.Tokens, got, budget)
	}
	if p.Cuts != 1 || !strings.Contains(p.System, "Some long texts were shortened") || !strings.HasSuffix(p.System, ruler.DefaultRubric) {
		t.Fatalf("cuts %d, system:\n%s", p.Cuts, p.System)
	}
	if !strings.Contains(p.User, final) || toolResult(t, p, "2") != "illegal move" {
		t.Fatal("a text other than the long tool result was cut")
	}
	got := toolResult(t, p, "1")
	m := markerRE.FindStringSubmatchIndex(got)
	if m == nil {
		t.Fatalf("no marker in %q", got)
	}
	cut, _ := strconv.Atoi(got[m[2]:m[3]])
	total, _ := strconv.Atoi(got[m[4]:m[5]])
	kept := total - cut
	// Estimate: 3 ASCII bytes a token; ⌈2k/3⌉ tokens kept from the start,
	// ⌊k/3⌋ from the end.
	head, tail := got[:m[0]], got[m[1]:]
	if total != 1000 || len(head) != 3*(kept-kept/3) || len(tail) != 3*(kept/3) ||
		!strings.HasPrefix(result, head) || !strings.HasSuffix(result, tail) {
		t.Fatalf("total %d, kept %d: head %d bytes, tail %d bytes", total, kept, len(head), len(tail))
	}
	// 500 tokens to save, plus the marker and the system message's note
	// (about 110 together); closeness to the budget is checked above.
	if cut < 500 || cut > 650 {
		t.Fatalf("cut %d tokens to save 500", cut)
	}
}

// When cutting tool results to their markers is not enough, every message
// text is cut; the system prompt and rubric never are. A budget nothing
// can meet is ErrPromptTooLong, and the judge is not called.
func TestBuildWithinCutsEverything(t *testing.T) {
	trajs, _, _ := longGroup()
	trajs[0].Messages[0].Content = "You play tic-tac-toe as X. Win. " + strings.Repeat("Rules. ", 200) // shared, long
	trajs[1].Messages[0].Content = trajs[0].Messages[0].Content
	est := ruler.Estimate{}
	base := ruler.Build(trajs, "")
	budget := est.Count(base.System) + 500
	p, err := ruler.BuildWithin(trajs, "", ruler.Budget{Tokens: budget})
	if err != nil {
		t.Fatal(err)
	}
	if p.Tokens > budget || p.Cuts < 3 || strings.Count(p.User, "tokens cut to fit") != p.Cuts || !strings.Contains(p.System, ruler.DefaultRubric) {
		t.Fatalf("tokens %d, budget %d, cuts %d:\n%s", p.Tokens, budget, p.Cuts, p.User)
	}
	_, blocks := judgetest.Blocks(p.User)
	if !strings.Contains(blocks["1"], "WIN") || !markerRE.MatchString(blocks["1"]) || !strings.Contains(p.User, "<shared_context>") ||
		!markerRE.MatchString(p.User[:strings.Index(p.User, "</shared_context>")]) {
		t.Fatalf("the long answer (its start kept) and the shared system prompt should both be cut:\n%s", p.User)
	}

	_, err = ruler.BuildWithin(trajs, "", ruler.Budget{Tokens: 50})
	if !errors.Is(err, ruler.ErrPromptTooLong) || !strings.Contains(err.Error(), "budget of 50") {
		t.Fatalf("err = %v", err)
	}
	f := &judge.Fake{Answer: func(int, judge.Request) (string, error) { return "", fmt.Errorf("called") }}
	s := &ruler.Scorer{Component: "ruler", Judge: f, Model: "m", Budget: ruler.Budget{Tokens: 50}}
	if _, err := s.ScoreGroup(context.Background(), &trajectory.Group{ID: "g9", Trajectories: trajs}); !errors.Is(err, ruler.ErrPromptTooLong) || !strings.Contains(err.Error(), `group "g9"`) {
		t.Fatalf("scorer err = %v", err)
	}
}

// Cuts fall on character boundaries, whatever the counter.
func TestCountersCutWholeCharacters(t *testing.T) {
	tok, err := tokenizer.Load("../../testdata/tokenizers/qwen3")
	if err != nil {
		t.Fatal(err)
	}
	counters := map[string]ruler.Counter{"estimate": ruler.Estimate{}, "qwen3": ruler.TokenizerCounter(tok)}
	texts := []string{"", "a", "plain ASCII words, and JSON {\"a\": [1, 2]}", "héllo wörld ü 你好世界 🙂🙂 ok", strings.Repeat("ü你🙂", 50)}
	for name, c := range counters {
		for _, s := range texts {
			e := c.Ends(s)
			if len(e) != c.Count(s) {
				t.Errorf("%s: %q: %d ends, count %d", name, s, len(e), c.Count(s))
			}
			prev := 0
			for _, x := range e {
				if x < prev || x > len(s) || (x < len(s) && !utf8.RuneStart(s[x])) {
					t.Fatalf("%s: %q: bad ends %v", name, s, e)
				}
				prev = x
			}
			if len(s) > 0 && e[len(e)-1] != len(s) {
				t.Fatalf("%s: %q: last end %d", name, s, e[len(e)-1])
			}
		}
		trajs := []trajectory.Trajectory{
			game("a", "{}", strings.Repeat("ü你🙂 text ", 400), "WIN"),
			game("b", "{}", "short", "no"),
		}
		whole := ruler.Build(trajs, "")
		full := c.Count(whole.System) + c.Count(whole.User)
		p, err := ruler.BuildWithin(trajs, "", ruler.Budget{Tokens: full * 2 / 3, Counter: c})
		if err != nil || p.Cuts != 1 || !utf8.ValidString(p.User) || c.Count(p.System)+c.Count(p.User) != p.Tokens || p.Tokens > full*2/3 {
			t.Fatalf("%s: cuts %d, tokens %d of %d, valid %v, err %v", name, p.Cuts, p.Tokens, full*2/3, utf8.ValidString(p.User), err)
		}
	}
}

// BenchmarkBuildWithin: a group of 8 whose tool results are 200 KB each
// (about 1.6 MB of prompt), cut to an 8192-token judge with Qwen3's
// tokenizer.
func BenchmarkBuildWithin(b *testing.B) {
	tok, err := tokenizer.Load("../../testdata/tokenizers/qwen3")
	if err != nil {
		b.Fatal(err)
	}
	var trajs []trajectory.Trajectory
	for i := range 8 {
		trajs = append(trajs, game(fmt.Sprint(i), "{}", strings.Repeat(fmt.Sprintf("line %d of the file, with some words. ", i), 5500), "done"))
	}
	budget := ruler.Budget{Tokens: 8192 - 1024 - 64, Counter: ruler.TokenizerCounter(tok)}
	b.ResetTimer()
	for range b.N {
		p, err := ruler.BuildWithin(trajs, "", budget)
		if err != nil || p.Cuts != 8 {
			b.Fatalf("cuts %d, err %v", p.Cuts, err)
		}
	}
}

// manyResults is a trajectory whose agent called a tool n times and got a
// short answer each time, and once more, a long one.
func manyResults(id string, n int, short, long string) trajectory.Trajectory {
	t := game(id, "{}", long, "done")
	var msgs []trajectory.Message
	for i := range n {
		cid := fmt.Sprintf("s%d", i)
		msgs = append(msgs,
			trajectory.Message{Role: "assistant", ToolCalls: []trajectory.ToolCall{{ID: cid, Type: "function", Name: "look", Arguments: "{}"}}},
			trajectory.Message{Role: "tool", ToolCallID: cid, Content: short})
	}
	t.Messages = append(t.Messages[:2], append(msgs, t.Messages[2:]...)...)
	return t
}

// A text is cut only where the cut makes it shorter: a short tool result
// is never replaced by a marker longer than itself, so a prompt that fits
// once its one long result is cut is not refused because its many short
// ones would have grown.
func TestBuildWithinLeavesShortTexts(t *testing.T) {
	long := strings.Repeat("0123456789", 600) // 2000 estimated tokens
	trajs := []trajectory.Trajectory{manyResults("a", 40, "ok", long), game("b", "{}", "illegal move", "oops")}
	est := ruler.Estimate{}
	whole := ruler.Build(trajs, "")
	full := est.Count(whole.System) + est.Count(whole.User)
	budget := full - 1500
	p, err := ruler.BuildWithin(trajs, "", ruler.Budget{Tokens: budget})
	if err != nil {
		t.Fatalf("cutting the one long tool result saves 2000 tokens of the 1500 needed: %v", err)
	}
	if p.Cuts != 1 || p.Tokens > budget || strings.Count(p.User, `"content":"ok"`) != 40 {
		t.Fatalf("cuts %d, tokens %d of %d: want the long result alone cut, every short one kept", p.Cuts, p.Tokens, budget)
	}
}

// The limit found is the largest that fits: texts a little longer than a
// lower limit, which a cut there would lengthen, do not stop the search
// short of it.
func TestBuildWithinLargestLimit(t *testing.T) {
	long := strings.Repeat("0123456789", 900) // 3000 estimated tokens
	short := strings.Repeat("abc", 60)        // 60 estimated tokens
	trajs := []trajectory.Trajectory{manyResults("a", 30, short, long), game("b", "{}", "illegal move", "oops")}
	est := ruler.Estimate{}
	whole := ruler.Build(trajs, "")
	full := est.Count(whole.System) + est.Count(whole.User)
	// Room for the long result cut to about 85 tokens, its marker (20)
	// and the system message's note on cuts (75), with every short result
	// whole. (Bisecting from 3000, a limit of 46 is tried on the way: a
	// marker of 19 tokens after 46 kept would lengthen every short result.)
	budget := full - 3000 + 85 + 20 + 75
	p, err := ruler.BuildWithin(trajs, "", ruler.Budget{Tokens: budget})
	if err != nil {
		t.Fatal(err)
	}
	if p.Cuts != 1 || strings.Count(p.User, short) != 30 || p.Tokens > budget {
		t.Fatalf("cuts %d, tokens %d of %d: want the long result alone cut", p.Cuts, p.Tokens, budget)
	}
	m := markerRE.FindStringSubmatch(p.User)
	if cut, _ := strconv.Atoi(m[1]); 3000-cut < 75 {
		t.Fatalf("the long result keeps %d tokens; about 85 fit", 3000-cut)
	}
}

// A group of many short attempts can outgrow the judge's context with no
// text worth cutting: the messages' JSON around the texts is what is long.
// The error used to blame "the system prompt, rubric and tool list alone"
// (a group of 16 unscramble attempts of 3 turns each, on a 4096-token
// judge); it must say how many trajectories and messages the group holds
// and that smaller groups fit.
func TestBuildWithinTooManyAttempts(t *testing.T) {
	var trajs []trajectory.Trajectory
	for i := range 16 {
		tr := trajectory.Trajectory{ID: fmt.Sprintf("t%d", i), GroupID: "g", Messages: []trajectory.Message{
			{Role: "user", Content: "Unscramble 'pleap'."}}}
		for k := range 3 {
			tr.Messages = append(tr.Messages, trajectory.Message{Role: "assistant", Content: fmt.Sprintf("w%d%d", i, k), Trainable: true},
				trajectory.Message{Role: "user", Content: "No. Try again."})
		}
		trajs = append(trajs, tr)
	}
	est := ruler.Estimate{}
	budget := est.Count(ruler.Build(trajs, "").System) + 200
	_, err := ruler.BuildWithin(trajs, "", ruler.Budget{Tokens: budget})
	if !errors.Is(err, ruler.ErrPromptTooLong) || !strings.Contains(err.Error(), "97 messages shown for the group's 16 trajectories") ||
		!strings.Contains(err.Error(), "smaller groups") {
		t.Fatalf("err = %v; want it to name the 97 messages shown (the shared first one once) for the group's 16 trajectories, and smaller groups", err)
	}
}

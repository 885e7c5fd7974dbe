package ruler_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/score/ruler"
)

// TestDocExampleMatchesPrompt: the example user message docs/ruler.md
// shows ("An example, with two attempts and one shared tool") is the one
// Build writes for two tic-tac-toe attempts offered the same tool, with
// each "..." of the page standing for text it leaves out. The page's
// example is the layout a user reads before paying for a judge; nothing
// checked it against the code, so a layout change could leave it behind.
func TestDocExampleMatchesPrompt(t *testing.T) {
	b, err := os.ReadFile("../../docs/ruler.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "An example, with two attempts and one shared tool:\n\n```\n")
	if !ok {
		t.Fatal("docs/ruler.md has no example block after \"An example, with two attempts and one shared tool:\"")
	}
	example, _, ok := strings.Cut(after, "\n```\n")
	if !ok {
		t.Fatal("docs/ruler.md: the example block is not closed")
	}
	parts := strings.Split(example, "...")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	pattern := regexp.MustCompile(`(?s)\A` + strings.Join(parts, ".*?") + `\z`)

	a := game("a", `{"cell":5}`, "ok", "I win")
	c := game("b", `{"cell":10}`, "illegal move", "oops")
	a.Tools, c.Tools = []trajectory.Tool{moveTool}, []trajectory.Tool{moveTool}
	p := ruler.Build([]trajectory.Trajectory{a, c}, "")
	if !pattern.MatchString(p.User) {
		t.Fatalf("docs/ruler.md's example is not the prompt Build writes (each ... standing for any text).\n--- page ---\n%s\n--- Build ---\n%s", example, p.User)
	}
}

// TestDocAnswerShapeMatchesSystem: the answer shape docs/ruler.md quotes
// from the system message ("answer with a JSON object keyed by trajectory
// id: `…`") is the one the system message of a group asks for, word for
// word, so that a change to the instructions cannot leave the page behind.
func TestDocAnswerShapeMatchesSystem(t *testing.T) {
	b, err := os.ReadFile("../../docs/ruler.md")
	if err != nil {
		t.Fatal(err)
	}
	page := strings.Join(strings.Fields(string(b)), " ")
	_, after, ok := strings.Cut(page, "keyed by trajectory id: `")
	if !ok {
		t.Fatal("docs/ruler.md does not quote the answer shape after \"keyed by trajectory id: `\"")
	}
	shape, _, _ := strings.Cut(after, "`")
	a := game("a", `{"cell":5}`, "ok", "I win")
	c := game("b", `{"cell":10}`, "illegal move", "oops")
	p := ruler.Build([]trajectory.Trajectory{a, c}, "")
	if !strings.Contains(p.System, shape) {
		t.Fatalf("docs/ruler.md's answer shape %s is not in the system message:\n%s", shape, p.System)
	}
}

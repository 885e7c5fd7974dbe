package judge_test

import (
	"os"
	"strings"
	"testing"

	"github.com/hone-rl/hone/score/judge"
)

// TestDocListFormParses: the answer docs/ruler.md gives as ART's list
// form is one Parse accepts. The page showed
// [{"trajectory_id", "explanation", "score"}], a bare list, which a user
// porting ART's answer model would take as a whole answer; Parse refuses a
// bare list and takes the list as the value of "scores", as ART's own
// Response model has it.
func TestDocListFormParses(t *testing.T) {
	b, err := os.ReadFile("../../docs/ruler.md")
	if err != nil {
		t.Fatal(err)
	}
	page := strings.Join(strings.Fields(string(b)), " ") // the page wraps its lines anywhere
	// The example is the first parenthesised code span after the name.
	_, after, ok := strings.Cut(page, "ART's list form")
	if ok {
		_, after, ok = strings.Cut(after, "(`")
	}
	if !ok {
		t.Fatal("docs/ruler.md has no (`…`) example after \"ART's list form\"")
	}
	example, _, ok := strings.Cut(after, "`")
	if !ok {
		t.Fatal("docs/ruler.md: the list form's code span is not closed")
	}
	scores, err := judge.Parse(judge.Request{IDs: []string{"1"}}, example)
	if err != nil {
		t.Fatalf("docs/ruler.md's list form %s is not an answer Parse accepts: %v", example, err)
	}
	if len(scores) != 1 || scores[0].ID != "1" {
		t.Fatalf("docs/ruler.md's list form %s parsed as %+v, want one score for id 1", example, scores)
	}
}

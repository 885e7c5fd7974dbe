package judge_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hone-rl/hone/score/judge"
)

// A judge without structured output may leave a score out or write null;
// that is a malformed answer to retry, not a score of 0.
func TestParseMissingScore(t *testing.T) {
	req := judge.Request{IDs: []string{"1", "2"}}
	for name, answer := range map[string]string{
		"keyed missing": `{"scores":{"1":{"explanation":"solved it"},"2":{"explanation":"no","score":0.2}}}`,
		"keyed null":    `{"scores":{"1":{"explanation":"solved it","score":null},"2":{"explanation":"no","score":0.2}}}`,
		"list missing":  `{"scores":[{"trajectory_id":"1","explanation":"solved it"},{"trajectory_id":"2","explanation":"no","score":0.2}]}`,
		"list null":     `{"scores":[{"trajectory_id":"1","explanation":"solved it","score":null},{"trajectory_id":"2","explanation":"no","score":0.2}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			s, err := judge.Parse(req, answer)
			if err == nil {
				t.Fatalf("Parse accepted an answer without a score for trajectory 1: %+v", s)
			}
			var je *judge.Error
			if !errors.As(err, &je) || !je.Retryable || !strings.Contains(err.Error(), `"1"`) {
				t.Fatalf("err = %v, want a retryable malformed error naming trajectory 1", err)
			}
		})
	}
}

// wantScores parses each content (named by its key) as an answer to req,
// a request for the scores of trajectories 1 and 2, and wants the scores
// 0.9 and 0.2 out of it.
func wantScores(t *testing.T, req judge.Request, contents map[string]string) {
	t.Helper()
	for name, content := range contents {
		t.Run(name, func(t *testing.T) {
			s, err := judge.Parse(req, content)
			if err != nil {
				t.Fatal(err)
			}
			if s[0].Score != 0.9 || s[1].Score != 0.2 {
				t.Errorf("scores %+v", s)
			}
		})
	}
}

// A reasoning judge served without a reasoning parser writes its thinking
// into the content before the JSON: with or without the opening <think>
// (some templates put it in the prompt), and with a fence after it. The
// answer after </think> is parsed; an answer that is JSON as it stands is
// not split, even when an explanation quotes </think>.
func TestParseAfterThinking(t *testing.T) {
	req := judge.Request{IDs: []string{"1", "2"}}
	const answer = `{"scores":{"1":{"explanation":"solved it","score":0.9},"2":{"explanation":"no","score":0.2}}}`
	wantScores(t, req, map[string]string{
		"think block":       "<think>\nTrajectory 1 {solves} it; 2 does not.\n</think>\n\n" + answer,
		"no opening tag":    "Trajectory 1 solves it.</think>" + answer,
		"fence after think": "<think>hm</think>\n```json\n" + answer + "\n```",
	})
	quoted := `{"scores":{"1":{"explanation":"ends with </think> oddly","score":0.9},"2":{"explanation":"no","score":0.2}}}`
	if s, err := judge.Parse(req, quoted); err != nil || s[0].Explanation != "ends with </think> oddly" {
		t.Errorf("an answer quoting </think>: %+v, %v", s, err)
	}
	if _, err := judge.Parse(req, "<think>still thinking when the tokens ran out"); err == nil {
		t.Errorf("thinking without an answer was accepted")
	}
}

// A judge without structured output (--judge-response-format none) often
// puts a sentence before or after its fenced JSON. The fenced block is
// the answer: such answers failed every attempt as "not the expected
// JSON" or "trailing text", though the docs say a fence is tolerated. A
// fence holding no JSON is still malformed.
func TestParseFenceAmidProse(t *testing.T) {
	req := judge.Request{IDs: []string{"1", "2"}}
	const answer = `{"scores":{"1":{"explanation":"solved it","score":0.9},"2":{"explanation":"no","score":0.2}}}`
	fenced := "```json\n" + answer + "\n```"
	wantScores(t, req, map[string]string{
		"prose before":       "Here are the scores:\n\n" + fenced,
		"prose after":        fenced + "\n\nTrajectory 1 clearly did best.",
		"prose around":       "Scores:\n" + fenced + "\nDone.",
		"untagged fence":     "Scores:\n```\n" + answer + "\n```\n",
		"after thinking too": "<think>1 wins</think>\nMy verdict:\n" + fenced + "\nThanks.",
		// The fence opened at the end of a line of prose, as models write
		// it too: the fence alone ends that line (a language tag after it,
		// nothing else), unlike one named inline in a sentence.
		"fence opened after prose": "Here are the scores: " + fenced + "\nDone.",
	})
	// The answer is the last fenced block that is JSON: a judge that
	// echoes the prompt's example first (the one-attempt template's is
	// valid JSON, with a score of 0) had the example taken for its answer.
	// A fence opens at the start of a line: one named inline in a sentence
	// before the answer was paired with the answer's opening fence, and
	// the answer was lost.
	one := judge.Request{IDs: []string{"1"}}
	const real = `{"scores": {"1": {"explanation": "reached the goal", "score": 0.8}}}`
	for name, content := range map[string]string{
		"example echoed first": "You asked for:\n```json\n" + `{"scores": {"1": {"explanation": "...", "score": 0.0}}}` + "\n```\nMy answer:\n```json\n" + real + "\n```",
		"fence named inline":   "I answer in a ```json``` fence, as asked.\n```json\n" + real + "\n```\n",
	} {
		t.Run(name, func(t *testing.T) {
			s, err := judge.Parse(one, content)
			if err != nil {
				t.Fatal(err)
			}
			if s[0].Score != 0.8 || s[0].Explanation != "reached the goal" {
				t.Errorf("scores %+v, want the answer's 0.8", s)
			}
		})
	}
	if _, err := judge.Parse(req, "Here you go:\n```\nTrajectory 1: 0.9\n```"); err == nil {
		t.Errorf("a fence holding no JSON was accepted")
	}
}

package judge_test

import (
	"strings"
	"testing"

	"github.com/hone-rl/hone/score/judge"
)

// TestParseScoreValues: a score of 1e999 (number or text) was "score is
// 1e999: want a number", though it is one, out of range; a hex float
// text such as "0x1p-1" was read as 0.5, which ART's answer model
// refuses; a list's trajectory_id written 1.0 or 1e0 matched no id "1";
// an explanation that is not a string was refused in encoding/json's
// words ("Go struct field keyedScore.explanation"). Each now says what
// the value is and what is wanted, or reads the id as the whole number.
func TestParseScoreValues(t *testing.T) {
	req := judge.Request{IDs: []string{"1", "2"}}
	keyed := func(s1 string) string {
		return `{"scores": {"1": {"explanation": "a", "score": ` + s1 + `}, "2": {"explanation": "b", "score": 0.5}}}`
	}
	for _, c := range []struct{ answer, want string }{
		{keyed(`1e999`), "out of range"},
		{keyed(`"1e999"`), "out of range"},
		{keyed(`"0x1p-1"`), "want a number written in decimal"},
		{keyed(`"Inf"`), "want a number written in decimal"},
		{keyed(`"1_0"`), "want a number written in decimal"},
		{`{"scores": {"1": {"explanation": 5, "score": 1}, "2": {"explanation": "b", "score": 0.5}}}`, "explanation is 5: want a string"},
		{`{"scores": [{"trajectory_id": "1", "explanation": ["x"], "score": 1}, {"trajectory_id": "2", "explanation": "b", "score": 0.5}]}`, `explanation is ["x"]: want a string`},
	} {
		_, err := judge.Parse(req, c.answer)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "Go struct") {
			t.Errorf("%s:\n err = %v, want one saying %q", c.answer, err, c.want)
		}
	}
	for _, id := range []string{"1.0", "1e0", "1"} {
		answer := `{"scores": [{"trajectory_id": ` + id + `, "explanation": "a", "score": 1}, {"trajectory_id": 2, "explanation": "b", "score": " 0.5 "}]}`
		s, err := judge.Parse(req, answer)
		if err != nil || s[0].Score != 1 || s[1].Score != 0.5 {
			t.Errorf("trajectory_id %s: %+v, %v", id, s, err)
		}
	}
}

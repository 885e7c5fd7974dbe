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
